"""The main agent over the WebSocket (seed 002): each client frame, through perception and execution, to its events.

A dialogue frame runs the one turn runner (`TurnRunner`, shared with HTTP chat) for perception, then execution;
selection and decide frames go straight to execution or the gate. Every frame's deadline starts on its arrival.
A frame is answered once: its events are stored under its replay key (the client_message_id, the selection's
interaction, the decision's idempotency key), and the same frame again gets them back and runs nothing.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from typing import Any, TypeVar
from uuid import UUID
from zoneinfo import ZoneInfo

import asyncpg

from config.settings import Settings
from engine.agents.registry import AgentRegistry
from engine.clock import Clock, system_clock
from engine.conversation.execution import Execution, Outcome
from engine.conversation.perception import Clarify, Perception, Shown, default_range
from engine.deadline import Deadline, StageTimeout
from engine.errors import Overloaded
from protocol.agents import ExecutionLayerInput
from protocol.http_chat import ChatRequest, ChatResponse, FillSlotsRequest
from protocol.rest import WriteRequestCreate, WriteRequestCreated
from protocol.store import ConversationMessageDTO
from protocol.ws import (
    ClarificationPayload,
    DecisionPayload,
    DialogueAnswerPayload,
    ExecutionResultPayload,
    ProcessingPayload,
    WsEnvelope,
)
from serve_app.turns.runner import TurnRunner
from serve_app.ws.context import Caller, ExecutionError, StoreFacts, summary
from serve_app.ws.log import Outbox, PlanningNotice, Send, frame_id
from serve_app.ws.outcomes import finish
from store import conversation, conversation_events, write_gate
from store.database import Database
from store.turn_log import utc_now

T = TypeVar("T")


class ConversationAgent:
    """One per orchestrator replica: the frames of every connection. `agents` is the sub-agent registry."""

    def __init__(
        self,
        *,
        settings: Settings,
        turns: TurnRunner,
        db: Database,
        agents: AgentRegistry,
        perception: Perception,
        clock: Clock | None = None,
    ) -> None:
        self.settings = settings
        self.turns = turns
        self.db = db
        self.agents = agents
        self.perception = perception
        self.cfg = settings.conversation
        self.tz = ZoneInfo(settings.timezone)
        self.clock = clock or system_clock(self.tz)

    def now(self) -> datetime:
        """The calendar time frames read relative dates against (the app's clock, in the user's zone)."""
        return self.clock().astimezone(self.tz)

    def deadline(self, modality: str, arrived: float) -> Deadline:
        return self.turns.deadline(modality, arrived)

    def admit(self, modality: str) -> None:
        """Shed a turn the admission would refuse before it costs a database read, as the HTTP gate does (the turn
        runner checks again when the turn starts)."""
        self.turns.admit(modality)

    async def lookup(self, deadline: Deadline, read: Callable[[asyncpg.Connection], Awaitable[T]]) -> T:
        """One read of the frame's own state (`read(conn)`) as a `store` phase of its deadline."""
        try:
            async with deadline.phase("store", self.settings.budgets.stage_s("store")):
                async with self.db.connection() as conn:
                    return await read(conn)
        except StageTimeout as exc:
            raise Overloaded("The frame's budget ran out looking it up; nothing ran, retry.") from exc

    async def replayed(self, caller: Caller, key: str, send: Send, deadline: Deadline) -> bool:
        """Send the events a frame with this key already produced; False when it produced none."""
        stored = await self.lookup(deadline, lambda conn: conversation_events.stored(conn, caller.user.id, key))
        for event in stored:
            await send(WsEnvelope.model_validate(event))
        return bool(stored)

    # ---- dialogue.input / dialogue.answer -------------------------------------------------------------------

    async def dialogue(
        self,
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
    ) -> None:
        """A user message through the turn engine (perception), then execution when it decided on an agent."""
        key = replay_key or f"input:{client_message_id}"
        deadline = self.deadline(modality, arrived)
        self.admit(modality)
        if await self.replayed(caller, key, send, deadline):
            return
        source_id, reply_id = frame_id(caller.user.id, key, "in"), frame_id(caller.user.id, key, "out")
        who, ids = (caller.user, caller.key), (source_id, reply_id)
        if session_id is not None and modality == "text":
            # an answer to the engine's question resumes its task: what does not fill the slot asks again
            response = await self.turns.fill_slots(
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
            response = await self.turns.chat(
                ChatRequest(
                    user_id=caller.key,
                    text=raw_content if modality == "text" else None,
                    modality=modality,
                    source_url=source_url,
                    session_id=session_id or caller.session_id,
                    client_message_id=client_message_id,
                ),
                authorization=None,
                arrived=arrived,
                caller=who,
                message_ids=ids,
                listener=PlanningNotice(send, source_id),
                deadline=deadline,
            )
        store = StoreFacts(self.db, self.settings.budgets, deadline)
        recent = await store.recent(caller.user.id, self.cfg.recent_messages)
        said = raw_content if modality == "text" else (response.recognized_text or "")
        out = Outbox(caller.user.id, key, send)
        perceived = self.perception.perceive(
            response,
            raw_input=said or "",
            source_message_id=source_id,
            question_id=reply_id,
            recent=recent,
            now=self.now(),
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
                    expires_at=self._expiry(recent, reply_id),
                    original_function_name=response.intent,
                    turn=summary(response.status.value, response.reply, deadline, response),
                ),
                logged_as=reply_id,
            )
            await self.commit(out, deadline)
        elif isinstance(perceived, Clarify):
            await self.ask_split(out, perceived, said or "", source_id, deadline, response, replaces=reply_id)
            await self.commit(out, deadline)
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
            await self.commit(out, deadline)
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
            await self.execute(
                caller, out, ExecutionLayerInput(**decision.model_dump(exclude={"missing_fields"})), deadline, response
            )

    def _expiry(self, recent: list[ConversationMessageDTO], question_id: UUID) -> datetime:
        asked = next((m for m in recent if m.id == question_id), None)
        if asked is None or asked.metadata.expires_at is None:
            return utc_now() + timedelta(seconds=self.settings.database.clarification_ttl_s)
        return asked.metadata.expires_at

    async def ask_split(
        self,
        out: Outbox,
        perceived: Clarify,
        raw_input: str,
        source_id: UUID,
        deadline: Deadline,
        response: ChatResponse | None = None,
        *,
        replaces: UUID | None = None,
    ) -> None:
        """Ask a split's questions in one clarification. `replaces`: the turn's reply, which the engine logged as
        its decision; perception is not done, so that message becomes the question."""
        name = "split-question"
        question_id = replaces or frame_id(out.user_id, out.replay_key, name)
        clarify = self.perception.split_questions(
            [q.field_name for q in perceived.request.questions],
            perceived.known,
            question_id,
            reason=perceived.request.reason,
        )
        request = clarify.request
        expires_at = out.question_expiry(self.settings.database.clarification_ttl_s)
        text = "为了帮你拆分这个目标，请告诉我：" + "；".join(q.question_text for q in request.questions)
        message = out.message(
            name,
            "assistant",
            text,
            message_id=question_id,
            message_kind="clarification_question",
            question_id=question_id,
            question_status="open",
            question_type="long_task_split",
            expires_at=expires_at,
            target_agent_name=request.original_agent_name,
            target_function_name=request.original_function_name,
            missing_fields=[q.field_name for q in request.questions],
            parsed_params={**_jsonable(perceived.known), "raw_input": raw_input, "source_message_id": str(source_id)},
        )
        await out.emit(
            "dialogue.clarification",
            ClarificationPayload(
                question_id=question_id,
                question_type="long_task_split",
                reason=request.reason,
                mode="batch",
                questions=request.questions,
                expires_at=expires_at,
                original_agent_name=request.original_agent_name,
                original_function_name=request.original_function_name,
                turn=summary("waiting_slot", text, deadline, response),
            ),
            message,
            after_commit=True,
        )
        # held until the frame's commit: that commit logs the question (or rewrites the turn's reply into it), and a
        # client answering the moment it hears the question must find it
        if replaces is not None:
            out.rewrites.append(out.messages.pop())

    async def answer(self, caller: Caller, payload: DialogueAnswerPayload, arrived: float, send: Send) -> None:
        """`dialogue.answer`: the question it replies to, if it is the caller's and still open; else a new input."""
        key = f"input:{payload.client_message_id}"
        deadline = self.deadline(payload.modality, arrived)
        question = None
        try:
            question_id = uuid.UUID(payload.reply_to_question_id)
        except ValueError:
            question_id = None
        if question_id is not None:
            question = await self.lookup(
                deadline, lambda conn: conversation.question(conn, caller.user.id, question_id)
            )
        raw = payload.raw_content or " ".join(payload.answers.values())
        if question is None or question.metadata.question_type != "long_task_split":
            session_id = question.metadata.session_id if question is not None else None
            await self.dialogue(
                caller,
                client_message_id=payload.client_message_id,
                modality=payload.modality,
                raw_content=raw,
                source_url=payload.source_url,
                arrived=arrived,
                send=send,
                session_id=session_id,
            )
            return
        if await self.replayed(caller, key, send, deadline):
            return
        await self.split_answer(caller, question, payload, raw, key, deadline, send)

    async def split_answer(
        self,
        caller: Caller,
        question: ConversationMessageDTO,
        payload: DialogueAnswerPayload,
        raw: str,
        key: str,
        deadline: Deadline,
        send: Send,
    ) -> None:
        meta = question.metadata
        known = dict(meta.parsed_params)
        raw_input, source_id = known.pop("raw_input", ""), uuid.UUID(known.pop("source_message_id"))
        read, missing = self.perception.read_answers(
            meta.missing_fields, payload.answers, payload.raw_content, self.now()
        )
        out = Outbox(caller.user.id, key, send)
        out.closes.append(question.id)
        out.messages.append(
            out.message(
                "answer",
                "user",
                raw,
                message_kind="clarification_answer",
                client_message_id=payload.client_message_id,
                reply_to_question_id=question.id,
                target_agent_name="long_task_split_agent",
                target_function_name="split",
                parsed_params=_jsonable(read),
            )
        )
        known.update(read)
        if missing:
            clarify = self.perception.split_questions(missing, known, question.id, reason="invalid_answer")
            await self.ask_split(out, clarify, raw_input, source_id, deadline)
            await self.commit(out, deadline)
            return
        store = StoreFacts(self.db, self.settings.budgets, deadline)
        recent = await store.recent(caller.user.id, self.cfg.recent_messages)
        time_range = default_range(self.cfg, "long_task_split_agent", "split", self.now())
        params = _jsonable(known)
        reply = "收到，我来把这个目标拆成可执行的小任务。"
        decision = out.message(
            "decision",
            "assistant",
            reply,
            message_kind="decision",
            target_agent_name="long_task_split_agent",
            target_function_name="split",
            parsed_params=params,
        )
        await out.emit(
            "dialogue.decision",
            DecisionPayload(
                source_message_id=source_id,
                target_agent_name="long_task_split_agent",
                target_function_name="split",
                parsed_params=params,
                time_range=time_range.model_dump(mode="json"),
                reply=reply,
            ),
            decision,
        )
        await self.execute(
            caller,
            out,
            ExecutionLayerInput(
                target_agent_name="long_task_split_agent",
                target_function_name="split",
                parsed_params=params,
                time_range=time_range,
                raw_input=raw_input,
                source_message_id=source_id,
                recent_messages=recent,
            ),
            deadline,
        )

    # ---- execution --------------------------------------------------------------------------------------------

    async def execute(
        self,
        caller: Caller,
        out: Outbox,
        inp: ExecutionLayerInput,
        deadline: Deadline,
        response: ChatResponse | None = None,
        *,
        selected: list[UUID] | None = None,
    ) -> None:
        """Run execution and commit the frame: its messages, its events and, for a proposal, its write request."""
        execution = Execution(self.agents, StoreFacts(self.db, self.settings.budgets, deadline))

        async def processing(stage: str) -> None:
            if stage == "calling_agent" and any(t == "execution.processing" for t, _, _ in out.events):
                return  # one processing event per frame
            await out.emit(
                "execution.processing",
                ProcessingPayload(
                    source_message_id=inp.source_message_id,
                    target_agent_name=inp.target_agent_name,
                    target_function_name=inp.target_function_name,
                    stage=stage,
                ),
                out.message(
                    "processing",
                    "assistant",
                    "正在处理…",
                    message_kind="execution_processing",
                    target_agent_name=inp.target_agent_name,
                    target_function_name=inp.target_function_name,
                ),
            )

        try:
            async with deadline.phase(
                "agent", self.settings.budgets.stage_s("agent") + self.settings.budgets.stage_s("facts") * 3
            ):
                outcome: Outcome = await execution.run(
                    inp, caller.user.id, self.now(), selected=selected, processing=processing
                )
        except StageTimeout as exc:
            raise ExecutionError(
                Overloaded("The frame's budget ran out in execution; nothing was written, retry.")
            ) from exc
        except Exception as exc:  # noqa: BLE001 — an agent's or a read's failure is the execution stage's error
            raise ExecutionError(exc) from exc
        await finish(self, caller, out, inp, outcome, deadline, response)

    async def commit(
        self,
        out: Outbox,
        deadline: Deadline,
        *,
        write: WriteRequestCreate | None = None,
        source_message_id: UUID | None = None,
        created: Callable[[WriteRequestCreated], Awaitable[None]] | None = None,
    ) -> None:
        """Commit the frame inside its budget (the commit's reserve, as a chat turn's): its write request, when it
        proposes one (`created` then adds the events that name it), its messages and its events, all or nothing."""
        if deadline.timeout_for(self.settings.budgets.stage_s("commit"), final=True) <= 0:
            raise ExecutionError(Overloaded("The frame's budget ran out before its commit; nothing was saved, retry."))
        with deadline.measure("commit"):
            async with self.db.transaction() as conn:
                if write is not None and created is not None:
                    await created(
                        await write_gate.create(
                            conn,
                            out.user_id,
                            write,
                            idempotency_key=f"ws:{out.replay_key}",
                            ttl_s=self.settings.database.write_request_ttl_s,
                            now=utc_now(),
                            source_message_id=source_message_id,
                        )
                    )
                await out.commit(conn)
        await out.sent_after_commit()


def _jsonable(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in values.items()}
