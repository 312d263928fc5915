"""HTTP chat, chat-stream and fill-slots on a pack with agents: the WebSocket's stages (serve_app/agents), their events
collected and mapped once onto the turn's `ChatResponse.agent`.

A chat message runs `dialogue.user_turn` exactly as a `dialogue.input` frame does. A fill-slots message continues
what the conversation last asked: a write's confirmation (确认 / 算了, or `slots.decision`) is `write.decide`, a
selection (`slots.selected_candidate_ids`, or 取消) is `selection.submit` / `selection.cancel`, a clarification is
`dialogue.answer` (`text`, or `slots` keyed by field_name for a batch); anything else is a new message.
"""

from __future__ import annotations

import re
import uuid
from typing import Any
from uuid import UUID

from engine.events import TurnListener
from protocol.http_chat import ChatRequest, ChatResponse, FillSlotsRequest
from protocol.rest import WriteDecisionRequest
from protocol.store import WriteDecisionResult
from protocol.ws import (
    DialogueAnswerPayload,
    SelectionCancelPayload,
    SelectionSubmitPayload,
    WriteDecidePayload,
    WsEnvelope,
)
from serve_app.agents import dialogue, frames
from serve_app.agents.agent import ConversationAgent
from serve_app.agents.context import Caller, ExecutionError
from serve_app.agents.wire import answered
from serve_app.auth import Callers
from serve_app.turns.stored import derived_session_id
from store import conversation, conversation_events
from store.users import User

CONFIRM = re.compile(r"^(确认|确定|是的?|好的?|可以|对|没问题|保存|行|ok|yes)[。！!.]?$", re.IGNORECASE)
DECLINE = re.compile(r"^(算了|取消|不要?了?|不用了?|别|否|no)[。！!.]?$", re.IGNORECASE)


class AgentChat:
    def __init__(self, agent: ConversationAgent, callers: Callers) -> None:
        self._agent = agent
        self._callers = callers

    async def _caller(self, authorization: str | None, user_id: str) -> Caller:
        user, key = await self._callers.of_turn(authorization, user_id)
        return Caller(user=user, key=key, pack=self._agent.turns.engine.pack.name)

    async def chat(
        self, body: ChatRequest, *, authorization: str | None, arrived: float, listener: TurnListener | None = None
    ) -> ChatResponse:
        self._agent.admit(body.modality)
        caller = await self._caller(authorization, body.user_id)
        events: list[WsEnvelope] = []

        async def collect(event: WsEnvelope) -> None:
            events.append(event)

        cmid = body.client_message_id or uuid.uuid4().hex
        response = await _unwrapped(
            dialogue.user_turn(
                self._agent,
                caller,
                client_message_id=cmid,
                modality=body.modality,
                raw_content=body.text,
                source_url=body.source_url,
                arrived=arrived,
                send=collect,
                # a message without a session starts its own, as a plain chat turn does
                chat_session_id=body.session_id or derived_session_id(caller.user.id, cmid),
                listener=listener,
            )
        )
        shown = answered(response, events, body.session_id)
        # the reply names what was not done, whichever event ended the turn (engine/partial.py: said once)
        return self._agent.turns.engine.partial.tell(shown, response.not_done) if response is not None else shown

    async def fill_slots(self, body: FillSlotsRequest, *, authorization: str | None, arrived: float) -> ChatResponse:
        self._agent.admit("text")
        caller = await self._caller(authorization, body.user_id)
        cmid = body.client_message_id or uuid.uuid4().hex
        text, slots = (body.text or "").strip(), body.slots or {}
        deadline = self._agent.deadline("text", arrived)
        last = await self._agent.lookup(deadline, lambda conn: conversation_events.last(conn, caller.user.id))
        kind, asked = (last["type"], last["payload"]) if last else (None, {})
        events: list[WsEnvelope] = []

        async def collect(event: WsEnvelope) -> None:
            events.append(event)

        agent = self._agent
        response: ChatResponse | None = None
        choice = _decision(text, slots)
        if kind == "write.confirmation_required" and choice is not None:
            decide = WriteDecidePayload(
                write_request_id=asked["write_request_id"],
                decision=choice,
                idempotency_key=cmid,
                payload_hash=asked["payload_hash"],
            )
            await _unwrapped(frames.decide(agent, caller, decide, arrived, collect))
        elif kind == "selection.required" and (slots.get("selected_candidate_ids") or DECLINE.match(text)):
            interaction = asked["interaction_id"]
            if slots.get("selected_candidate_ids"):
                submit = SelectionSubmitPayload(
                    interaction_id=interaction, selected_candidate_ids=slots["selected_candidate_ids"]
                )
                await _unwrapped(frames.submit(agent, caller, submit, arrived, collect))
            else:
                cancel = SelectionCancelPayload(interaction_id=interaction)
                await _unwrapped(frames.cancel(agent, caller, cancel, arrived, collect))
        elif kind == "dialogue.clarification":
            answer = DialogueAnswerPayload(
                client_message_id=cmid,
                reply_to_question_id=asked["question_id"],
                raw_content=text or None,
                answers={k: str(v) for k, v in slots.items() if isinstance(v, str | int | float)},
            )
            response = await _unwrapped(dialogue.answer_turn(agent, caller, answer, arrived, collect))
        else:
            response = await _unwrapped(
                dialogue.user_turn(
                    agent,
                    caller,
                    client_message_id=cmid,
                    modality="text",
                    raw_content=text,
                    source_url=None,
                    arrived=arrived,
                    send=collect,
                    session_id=body.session_id,
                )
            )
        return answered(response, events, body.session_id)

    async def decide(
        self, write_request_id: UUID, body: WriteDecisionRequest, user: User, *, arrived: float
    ) -> WriteDecisionResult | None:
        """`POST /write-requests/{id}/decide` on a write the conversation proposed: `write.decide`, as fill-slots'
        确认 / 算了, so the message's steps after it run too (their results go to the conversation's log). None for a
        write no conversation proposed, or a decision already made: the gate alone answers those."""
        deadline = self._agent.deadline("text", arrived)
        asked = await self._agent.lookup(
            deadline, lambda conn: conversation.confirmation(conn, user.id, write_request_id)
        )
        if asked is None:
            return None
        payload = WriteDecidePayload(
            write_request_id=write_request_id,
            decision=body.decision,
            idempotency_key=body.idempotency_key,
            payload_hash=body.payload_hash,
        )

        async def logged_only(event: WsEnvelope) -> None:
            return None  # REST answers the gate's result; the events stay in the log for the conversation

        decided: WriteDecisionResult | None = await _unwrapped(
            frames.decide(self._agent, Caller(user=user, key=str(user.id)), payload, arrived, logged_only)
        )
        return decided


def _decision(text: str, slots: dict[str, Any]) -> Any:
    said = slots.get("decision")
    if said in ("confirmed", "rejected"):
        return said
    if CONFIRM.match(text):
        return "confirmed"
    return "rejected" if DECLINE.match(text) else None


async def _unwrapped(running: Any) -> Any:
    """An execution stage's error is its cause on HTTP: the one mapping (serve_app/errors.py) gives it its status."""
    try:
        return await running
    except ExecutionError as exc:
        raise exc.cause from exc
