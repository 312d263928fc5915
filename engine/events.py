"""What a streaming client hears while a turn runs (POST /api/v1/agent/chat-stream): the engine calls these from
the real execution — `ack` once the turn is understood and a plugin is about to run, `step` after each step —
and asks `gone` before every plugin, so a client that went away stops the rest of the turn."""

from __future__ import annotations

import abc

from protocol.workflow import Workflow, WorkflowStep


class ClientGone(Exception):
    """The client stopped listening: no further plugin runs; what ran stays run and is committed."""


class TurnListener(abc.ABC):
    @abc.abstractmethod
    async def ack(self, reply: str, workflow: Workflow | None) -> None:
        """The turn is understood and its first plugin is about to run (sent once per turn)."""

    async def planning(self, reply: str, budget_ms: float) -> None:  # noqa: B027 — optional hook, by default silent
        """The turn escalated to the LLM planner and waits on it (sent once, instead of `ack`); `budget_ms` is
        its budget from arrival from now on."""

    async def delta(self, text: str) -> None:  # noqa: B027 — optional hook, by default silent
        """The next checked clause of a reply an LLM is writing (the final reply starts with the deltas sent)."""

    @abc.abstractmethod
    async def step(self, step: WorkflowStep) -> None:
        """A step finished (done, skipped or failed)."""

    @property
    def gone(self) -> bool:
        """True once the client stopped listening."""
        return False
