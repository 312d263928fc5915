"""What one turn carries through the pipeline, and the response timings read from it."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from engine.deadline import Deadline
from engine.events import ClientGone, TurnListener
from engine.plugins import TurnWorld
from protocol.turn_debug import ReplyDebug, Timings
from protocol.workflow import NotDone, Workflow, WorkflowStep

Recall = Callable[[tuple[float, ...], str], Awaitable[list[str]]]  # (vector, the turn's text) -> earlier messages
Profile = Callable[[], Awaitable[dict[str, Any]]]  # the user's profile (seed 002's profile_data), {} before one exists
# the conversation before this turn as chat messages ({role, content}), oldest first, as far back as the log is read
History = Callable[[], Awaitable[list[dict[str, str]]]]


@dataclass
class TurnContext:
    """What one turn carries through the pipeline: its deadline (stamped on arrival), the user's world and, for a
    streaming client, who hears the turn as it runs."""

    deadline: Deadline
    world: TurnWorld
    listener: TurnListener | None = None
    acked: bool = False
    # semantic memory: the turn text's vector from its one encoder pass (kept with the logged message), and how the
    # caller recalls the user's earlier messages near a vector (None: no memory, e.g. in-process sessions)
    vector: tuple[float, ...] | None = None
    recall: Recall | None = None
    profile: Profile | None = None  # how the caller reads the user's profile (None: no store, no profile)
    history: History | None = None  # how the caller reads the conversation (None: no store, the last exchange)
    replies: list[ReplyDebug] = field(default_factory=list)  # the LLM backends asked to write the reply
    not_done: list[NotDone] = field(default_factory=list)  # the clauses outside the catalog (engine/partial.py)

    async def ack(self, reply: str, workflow: Workflow | None = None) -> None:
        if self.listener is not None and not self.acked:
            self.acked = True
            await self.listener.ack(reply, workflow)

    async def escalate(self, reply: str, extra_ms: float) -> None:
        """The turn waits on the LLM planner: its budget grows by `extra_ms` and a streaming client hears it first."""
        self.deadline.escalate(extra_ms)
        if self.listener is not None and not self.acked:
            self.acked = True
            await self.listener.planning(reply, self.deadline.budget_ms)

    @property
    def on_delta(self) -> Callable[[str], Awaitable[None]] | None:
        """Where a generated reply's checked clauses go as they come: the streaming client, when there is one."""
        listener = self.listener
        return listener.delta if listener is not None else None

    async def step(self, step: WorkflowStep) -> None:
        if self.listener is not None:
            await self.listener.step(step)

    def before_plugin(self) -> None:
        """Raises ClientGone when the streaming client went away: no further plugin runs."""
        if self.listener is not None and self.listener.gone:
            raise ClientGone


def timings_of(deadline: Deadline) -> Timings:
    """The response's timings from the deadline as it stands now (total = arrival to now)."""
    return Timings(
        stages=dict(deadline.stages_ms),
        spans_ms={k: list(v) for k, v in deadline.spans_ms.items()},
        total_ms=round(deadline.elapsed_ms(), 3),
        budget_ms=deadline.budget_ms,
        degraded=list(deadline.degraded),
        escalated=deadline.escalated,
    )
