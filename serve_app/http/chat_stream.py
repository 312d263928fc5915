"""POST /api/v1/agent/chat-stream (seed 003 §6.2): the turn as NDJSON, one event per line, from the real execution.

`ack` when the turn is understood and its first plugin is about to run, `step` per step result, `delta` per checked
clause of a reply an LLM backend writes (docs/llm-backends.md), then `final` with
the chat response, or `error` with the envelope's error. A turn refused before it produced anything (auth,
overload, bad input) is answered with its HTTP status like /chat. A client that goes away stops the rest of the
turn before any further plugin runs; what already ran is committed with the session.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

from engine.errors import BatonError
from engine.events import TurnListener
from protocol.base import ErrorBody
from protocol.chat_stream import AckEvent, DeltaEvent, ErrorEvent, FinalEvent, StepEvent
from protocol.http_chat import ChatResponse
from protocol.workflow import Workflow, WorkflowStep

Event = AckEvent | StepEvent | DeltaEvent | FinalEvent | ErrorEvent
_RUNNING: set[asyncio.Task[None]] = set()  # a turn outlives a client that left: hold it until it has committed


class QueueListener(TurnListener):
    def __init__(self) -> None:
        self.events: asyncio.Queue[Event | None] = asyncio.Queue()
        self.left = False

    async def ack(self, reply: str, workflow: Workflow | None) -> None:
        self.events.put_nowait(AckEvent(reply=reply, workflow=workflow.model_copy(deep=True) if workflow else None))

    async def planning(self, reply: str, budget_ms: float) -> None:
        self.events.put_nowait(AckEvent(reply=reply, escalated=True, budget_ms=budget_ms))

    async def step(self, step: WorkflowStep) -> None:
        self.events.put_nowait(StepEvent(step=step.model_copy(deep=True)))

    async def delta(self, text: str) -> None:
        self.events.put_nowait(DeltaEvent(text=text))

    @property
    def gone(self) -> bool:
        return self.left


class ChatStream:
    """Runs one turn with a listener; `first()` waits for its first event, `lines()` yields the rest as NDJSON."""

    def __init__(self, turn: Callable[[TurnListener], Awaitable[ChatResponse]]) -> None:
        self._listener = QueueListener()
        self.failure: BatonError | None = None
        self._task = asyncio.ensure_future(self._run(turn))
        _RUNNING.add(self._task)
        self._task.add_done_callback(_RUNNING.discard)

    async def _run(self, turn: Callable[[TurnListener], Awaitable[ChatResponse]]) -> None:
        events = self._listener.events
        try:
            events.put_nowait(FinalEvent(response=await turn(self._listener)))
        except BatonError as exc:
            self.failure = exc
            events.put_nowait(ErrorEvent(error=ErrorBody(code=exc.code, message=exc.message, field=exc.field)))
        except Exception as exc:  # noqa: BLE001 — never a dropped stream: an error event instead
            events.put_nowait(
                ErrorEvent(
                    error=ErrorBody(
                        code="internal_error", message=f"Unexpected {type(exc).__name__}; the turn was not applied."
                    )
                )
            )
        finally:
            events.put_nowait(None)

    async def first(self) -> Event:
        event = await self._listener.events.get()
        assert event is not None
        return event

    async def lines(self, first: Event) -> AsyncIterator[str]:
        try:
            yield first.model_dump_json() + "\n"
            while (event := await self._listener.events.get()) is not None:
                yield event.model_dump_json() + "\n"
        finally:
            # the client went away (or the stream ended): no further plugin runs; the turn itself runs on to its
            # commit (bounded by its own deadline), so what ran is saved with its session
            self._listener.left = True
