"""The main agent over the WebSocket (seed 002): each client frame, through perception and execution, to its events.

A dialogue frame runs the one turn runner (`TurnRunner`, shared with HTTP chat) for perception, then execution;
selection and decide frames go straight to execution or the gate. Every frame's deadline starts on its arrival.
A frame is answered once: its events are stored under its replay key (the client_message_id, the selection's
interaction, the decision's idempotency key), and the same frame again gets them back and runs nothing.

This module holds what the stages share: the frame's clock, deadline and admission, its replay, execution and the
commit. The stages: serve_app/agents/dialogue.py (dialogue.input, dialogue.answer), split_questions.py (a long-task
split's questions and answers), frames.py (selection, write.decide, resume) and outcomes.py (execution's outcome).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TypeVar
from uuid import UUID
from zoneinfo import ZoneInfo

import asyncpg

from config.settings import Settings
from engine.agents.registry import AgentRegistry
from engine.clock import Clock, system_clock
from engine.conversation.agent_runner import AgentRunner, start
from engine.conversation.perception import Perception
from engine.deadline import Deadline, StageTimeout
from engine.errors import Overloaded
from engine.streaming import OnDelta, streaming_to
from protocol.agent_turn import AgentWorkflowState
from protocol.agents import ExecutionLayerInput
from protocol.http_chat import ChatResponse
from protocol.rest import WriteRequestCreate, WriteRequestCreated
from protocol.store import ConversationMessageDTO
from protocol.ws import ProcessingPayload, WsEnvelope
from serve_app.agents.context import Caller, ExecutionError, StoreFacts
from serve_app.agents.log import Outbox, Send
from serve_app.agents.outcomes import finish
from serve_app.turns.runner import TurnRunner
from store import conversation_events, write_gate
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

    async def recent(self, caller: Caller, deadline: Deadline) -> list[ConversationMessageDTO]:
        return await StoreFacts(self.db, self.settings.budgets, deadline).recent(
            caller.user.id, self.cfg.recent_messages
        )

    async def execute(
        self,
        caller: Caller,
        out: Outbox,
        steps: ExecutionLayerInput | AgentWorkflowState,
        deadline: Deadline,
        response: ChatResponse | None = None,
        *,
        selected: list[UUID] | None = None,
        on_delta: OnDelta | None = None,
    ) -> None:
        """Run the agent steps (one, or a workflow of several said in one message) until one pauses or all ran, and
        commit the frame: its messages, its events and, for a proposal, its write request. `on_delta`: where an
        agent's generated text goes piece by piece as it passes its checks (the streaming client)."""
        workflow = steps if isinstance(steps, AgentWorkflowState) else start([steps])
        runner = AgentRunner(self.agents, StoreFacts(self.db, self.settings.budgets, deadline))
        inp = workflow.steps[0]

        async def processing(stage: str) -> None:
            if any(t == "execution.processing" for t, _, _ in out.events):
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

        budgets = self.settings.budgets
        per_step = budgets.stage_s("agent") + budgets.stage_s("facts") * 3
        # a step whose texts an LLM writes (seed 000's programs) may take that much longer: the frame's budget grows
        # once by the escalation's extra time, as for the LLM planner, and the phase by the writer's wait
        extra_s = sum(self.agents.extra_s(s.target_agent_name) for s in workflow.steps)
        if extra_s > 0:
            deadline.escalate(budgets.escalation_ms())
        try:
            with streaming_to(on_delta):
                async with deadline.phase("agent", per_step * len(workflow.steps) + extra_s):
                    run = await runner.run(
                        workflow, caller.user.id, self.now(), selected=selected, processing=processing
                    )
        except StageTimeout as exc:
            raise ExecutionError(
                Overloaded("The frame's budget ran out in execution; nothing was written, retry.")
            ) from exc
        except Exception as exc:  # noqa: BLE001 — an agent's or a read's failure is the execution stage's error
            raise ExecutionError(exc) from exc
        await finish(self, caller, out, run, deadline, response)

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
