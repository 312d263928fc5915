"""What one WebSocket frame produced: its events, in order, each with the conversation message that logs it.

The frame's messages and events are committed together, in the transaction that also creates its write request
or applies its decision, so a frame either shows completely in the log (and replays identically) or not at all.
Events are sent to the client as they are produced; a client that went away finds them in the snapshot.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any
from uuid import UUID

import asyncpg

from engine.events import TurnListener
from protocol.base import WireModel
from protocol.store import ConversationMessageMetadata, MessageRole
from protocol.workflow import Workflow, WorkflowStep
from protocol.ws import DeltaPayload, ProcessingPayload, WsEnvelope, envelope
from store import conversation, conversation_events
from store.conversation import NewMessage
from store.turn_log import utc_now

Send = Callable[[WsEnvelope], Awaitable[None]]
MESSAGE_IDS = uuid.UUID("0b7f3c52-61f4-4a8e-9d3c-7e2a5b1c9d40")


def frame_id(user_id: UUID, replay_key: str, name: str) -> UUID:
    """A deterministic id for something a frame creates: the same frame sent again names the same message."""
    return uuid.uuid5(MESSAGE_IDS, f"{user_id}/{replay_key}/{name}")


@dataclass
class Outbox:
    user_id: UUID
    replay_key: str
    send: Send
    events: list[tuple[str, dict[str, Any], UUID | None]] = field(default_factory=list)
    messages: list[NewMessage] = field(default_factory=list)
    closes: list[UUID] = field(default_factory=list)  # questions this frame answered
    rewrites: list[NewMessage] = field(default_factory=list)  # messages this frame logged already, said otherwise

    held: list[WsEnvelope] = field(default_factory=list)
    first_seq: int = 1  # a frame's second commit (the steps a decision resumed) numbers its events after the first

    async def emit(
        self,
        type_: str,
        payload: WireModel,
        message: NewMessage | None = None,
        *,
        logged_as: UUID | None = None,
        after_commit: bool = False,
    ) -> WsEnvelope:
        """Keep an event with the message that logs it (`logged_as`: one already logged) and send it — now, or,
        for an event that names what the commit creates, once `sent_after_commit()`."""
        event = envelope(type_, payload)
        if message is not None:
            self.messages.append(message)
        self.events.append((type_, event.payload, message.id if message is not None else logged_as))
        if after_commit:
            self.held.append(event)
        else:
            await self.send(event)
        return event

    async def sent_after_commit(self) -> None:
        for event in self.held:
            await self.send(event)
        self.held.clear()

    def message(
        self, name: str, role: MessageRole, raw_content: str, *, message_id: UUID | None = None, **metadata: Any
    ) -> NewMessage:
        return NewMessage(
            role=role,
            raw_content=raw_content,
            metadata=ConversationMessageMetadata(**metadata),
            id=message_id or frame_id(self.user_id, self.replay_key, name),
        )

    def question_expiry(self, ttl_s: int) -> datetime:
        return utc_now() + timedelta(seconds=ttl_s)

    async def commit(self, conn: asyncpg.Connection) -> None:
        """Inside the caller's transaction: close the answered questions, log the messages, keep the events."""
        for question_id in self.closes:
            await conversation.close_question(conn, self.user_id, question_id, "answered")
        for message in self.rewrites:
            await conversation.rewrite(conn, self.user_id, message)
        await conversation.append(conn, self.user_id, self.messages)
        await conversation_events.record(conn, self.user_id, self.replay_key, self.events, first_seq=self.first_seq)


class ProgressNotice(TurnListener):
    """Tells the client, before the turn waits on the LLM planner, that it escalated (`execution.processing`, stage
    planning), and hands on each checked clause of a reply an LLM backend writes (`execution.delta`). Progress
    notices: sent at once, not logged, not part of the frame's replay (the outcome event carries the whole reply)."""

    def __init__(self, send: Send, source_message_id: UUID) -> None:
        self._send, self._source = send, source_message_id

    async def planning(self, reply: str, budget_ms: float) -> None:
        await self._send(
            envelope(
                "execution.processing",
                ProcessingPayload(
                    source_message_id=self._source,
                    target_agent_name=None,
                    target_function_name=None,
                    stage="planning",
                    budget_ms=budget_ms,
                ),
            )
        )

    async def delta(self, text: str) -> None:
        await self._send(envelope("execution.delta", DeltaPayload(source_message_id=self._source, text=text)))

    async def ack(self, reply: str, workflow: Workflow | None) -> None:
        """The WebSocket answers with the turn's outcome events, not an acknowledgement."""

    async def step(self, step: WorkflowStep) -> None:
        """Step results reach the client in the outcome event's turn summary."""
