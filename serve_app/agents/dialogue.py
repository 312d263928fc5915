"""`dialogue.input` and `dialogue.answer`: a user message through the turn runner (perception), then to a
clarification, a shown result, or a decision that execution carries out. An answer to a long-task split's question
goes on to the split (serve_app/agents/split_questions.py); any other answer is a new input.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

from engine.conversation.agent_runner import start
from engine.conversation.perception import Clarify, Shown
from engine.events import TurnListener
from engine.scheduling.route import routed
from protocol.agents import ExecutionLayerInput
from protocol.http_chat import ChatRequest, ChatResponse, FillSlotsRequest
from protocol.store import ConversationMessageDTO
from protocol.ws import ClarificationPayload, DecisionPayload, DialogueAnswerPayload, ExecutionResultPayload
from serve_app.agents.agent import ConversationAgent
from serve_app.agents.context import Caller, StoreFacts, summary
from serve_app.agents.log import Outbox, ProgressNotice, Send, frame_id
from serve_app.agents.split_questions import ask_split, split_answer
from store import conversation
from store.turn_log import utc_now


async def user_turn(
    agent: ConversationAgent,
    caller: Caller,
    *,
    client_message_id: str,
    modality: str,
    raw_content: str | None,
    source_url: str | None,
    arrived: float,
    send: Send,
    session_id: str | None = None,
    replay_key: str | None = None,
    chat_session_id: str | None = None,
    listener: TurnListener | None = None,
) -> ChatResponse | None:
    """A user message through the turn engine (perception), then execution when it decided on an agent. Returns the
    engine's response; None when the message was answered already (its stored events were sent again).
    `session_id`: the engine's question this answers; `chat_session_id`: the conversation's session (HTTP chat names
    its own; the WebSocket has one per user); `listener`: hears the turn (default: the progress notices)."""
    key = replay_key or f"input:{client_message_id}"
    deadline = agent.deadline(modality, arrived)
    agent.admit(modality)
    if await agent.replayed(caller, key, send, deadline):
        return None
    source_id, reply_id = frame_id(caller.user.id, key, "in"), frame_id(caller.user.id, key, "out")
    notice = listener or ProgressNotice(send, source_id)
    who, ids = (caller.user, caller.key), (source_id, reply_id)
    if session_id is not None and modality == "text":
        # an answer to the engine's question resumes its task: what does not fill the slot asks again
        response = await agent.turns.fill_slots(
            FillSlotsRequest(
                session_id=session_id, user_id=caller.key, text=raw_content, client_message_id=client_message_id
            ),
            authorization=None,
            arrived=arrived,
            caller=who,
            message_ids=ids,
            deadline=deadline,
        )
    else:
        response = await agent.turns.chat(
            ChatRequest(
                user_id=caller.key,
                text=raw_content if modality == "text" else None,
                modality=modality,
                source_url=source_url,
                session_id=session_id or chat_session_id or caller.session_id,
                client_message_id=client_message_id,
            ),
            authorization=None,
            arrived=arrived,
            caller=who,
            message_ids=ids,
            listener=notice,
            deadline=deadline,
        )
    store = StoreFacts(agent.db, agent.settings.budgets, deadline)
    recent = await store.recent(caller.user.id, agent.cfg.recent_messages)
    said = raw_content if modality == "text" else (response.recognized_text or "")
    out = Outbox(caller.user.id, key, send)
    perceived = agent.perception.perceive(
        routed(response, said or "", agent.now()),
        raw_input=said or "",
        source_message_id=source_id,
        question_id=reply_id,
        recent=recent,
        now=agent.now(),
        reasked=session_id is not None,
    )
    if isinstance(perceived, Clarify) and perceived.question_type != "long_task_split":
        await out.emit(
            "dialogue.clarification",
            ClarificationPayload(
                question_id=reply_id,
                question_type=perceived.question_type,
                reason=perceived.request.reason,
                mode="single",
                questions=perceived.request.questions,
                expires_at=_expiry(agent, recent, reply_id),
                original_function_name=response.intent,
                turn=summary(response.status.value, response.reply, deadline, response),
            ),
            logged_as=reply_id,
        )
        await agent.commit(out, deadline)
    elif isinstance(perceived, Clarify):
        await ask_split(agent, out, perceived, said or "", source_id, deadline, response, replaces=reply_id)
        await agent.commit(out, deadline)
    elif isinstance(perceived, Shown):
        await out.emit(
            "execution.result",
            ExecutionResultPayload(
                reply=perceived.reply,
                result=perceived.result,
                source_message_id=source_id,
                turn=summary(response.status.value, response.reply, deadline, response),
            ),
            logged_as=reply_id,
        )
        await agent.commit(out, deadline)
    else:
        decision = perceived.decision
        await out.emit(
            "dialogue.decision",
            DecisionPayload(
                source_message_id=source_id,
                target_agent_name=decision.target_agent_name,
                target_function_name=decision.target_function_name,
                parsed_params=decision.parsed_params,
                time_range=decision.time_range.model_dump(mode="json"),
                reply=response.reply,
            ),
            logged_as=reply_id,
        )
        steps = [ExecutionLayerInput(**d.model_dump(exclude={"missing_fields"})) for d in (decision, *perceived.then)]
        await agent.execute(caller, out, start(steps), deadline, response, on_delta=notice.delta)
    return response


async def user_input(agent: ConversationAgent, caller: Caller, **said: Any) -> None:
    """`dialogue.input` over the WebSocket: `user_turn`, whose response its events already carry."""
    await user_turn(agent, caller, **said)


def _expiry(agent: ConversationAgent, recent: list[ConversationMessageDTO], question_id: UUID) -> datetime:
    asked = next((m for m in recent if m.id == question_id), None)
    if asked is None or asked.metadata.expires_at is None:
        return utc_now() + timedelta(seconds=agent.settings.database.clarification_ttl_s)
    return asked.metadata.expires_at


async def answer_turn(
    agent: ConversationAgent, caller: Caller, payload: DialogueAnswerPayload, arrived: float, send: Send
) -> ChatResponse | None:
    """`dialogue.answer`: the question it replies to, if it is the caller's and still open; else a new input.
    Returns the engine's response when the answer ran a turn (see `user_input`)."""
    key = f"input:{payload.client_message_id}"
    deadline = agent.deadline(payload.modality, arrived)
    question = None
    try:
        question_id = uuid.UUID(payload.reply_to_question_id)
    except ValueError:
        question_id = None
    if question_id is not None:
        question = await agent.lookup(deadline, lambda conn: conversation.question(conn, caller.user.id, question_id))
    raw = payload.raw_content or " ".join(payload.answers.values())
    if question is None or question.metadata.question_type != "long_task_split":
        session_id = question.metadata.session_id if question is not None else None
        return await user_turn(
            agent,
            caller,
            client_message_id=payload.client_message_id,
            modality=payload.modality,
            raw_content=raw,
            source_url=payload.source_url,
            arrived=arrived,
            send=send,
            session_id=session_id,
        )
    if await agent.replayed(caller, key, send, deadline):
        return None
    await split_answer(agent, caller, question, payload, raw, key, deadline, send)
    return None


async def answer(
    agent: ConversationAgent, caller: Caller, payload: DialogueAnswerPayload, arrived: float, send: Send
) -> None:
    """`dialogue.answer` over the WebSocket (see `answer_turn`)."""
    await answer_turn(agent, caller, payload, arrived, send)
