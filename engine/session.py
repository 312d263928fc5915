"""Per-conversation turn state and the store interface it lives behind (in-process today, PostgreSQL later)."""

from __future__ import annotations

import abc
import asyncio
import time
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, Field

from protocol.workflow import Workflow


class SessionStatus(StrEnum):
    idle = "idle"
    waiting_slot = "waiting_slot"
    waiting_confirmation = "waiting_confirmation"
    completed = "completed"
    decided = "decided"
    rejected = "rejected"
    fallback = "fallback"
    stopped = "stopped"
    social = "social"


ACTIVE = frozenset({SessionStatus.waiting_slot, SessionStatus.waiting_confirmation})


class Asked(BaseModel):
    """An open disambiguation: the request it asked about and the intents it offered."""

    text: str
    options: list[str]


class SessionState(BaseModel):
    session_id: str
    user_id: str
    pack: str | None = Field(
        default=None,
        description="The pack whose conversation this is (stamped by the store-backed turns; None: not yet, or saved "
        "before packs were recorded): a database shared by several packs keeps each session to its own.",
    )
    status: SessionStatus = SessionStatus.idle
    current_intent: str | None = None
    slots: dict[str, Any] = Field(default_factory=dict)
    pending_slots: list[str] = Field(default_factory=list)
    memory: dict[str, Any] = Field(
        default_factory=dict, description="Context memory for rewrites: last_temperature, last_destination..."
    )
    workflow: Workflow | None = Field(
        default=None, description="The planned workflow this conversation is running or paused in."
    )
    asked: Asked | None = Field(
        default=None, description="The disambiguation the last turn asked; the next answer settles it."
    )
    last_user_text: str = ""
    last_agent_text: str = ""
    turns: int = 0
    version: int = 0
    updated_at: float = Field(default_factory=time.time)

    @property
    def has_active_task(self) -> bool:
        return self.status in ACTIVE and self.current_intent is not None

    def recent_dialog(self) -> list[dict[str, str]]:
        """The last exchange as chat messages (the LLM planner's history), oldest first."""
        said = [("user", self.last_user_text), ("assistant", self.last_agent_text)]
        return [{"role": role, "content": text} for role, text in said if text]

    def claim(self, pack: str) -> bool:
        """Whether a turn of `pack` may resume this session, stamping it as that pack's. A session of another pack (two
        assistants over one database) is not resumed: its state means nothing to this pack's engine, and a turn here
        would overwrite that conversation. A session that recorded no pack is adopted."""
        if self.pack not in (None, pack):
            return False
        self.pack = pack
        return True

    def other_pack_message(self, pack: str) -> str:
        return (
            f"Session '{self.session_id}' is a conversation with the {self.pack} assistant, not the {pack} one; "
            "use another session_id."
        )

    def reset_task(self) -> None:
        self.current_intent = None
        self.slots = {}
        self.pending_slots = []


class SessionStore(abc.ABC):
    """Load and save turn state by session id; `save` must reject a stale version."""

    @abc.abstractmethod
    async def load(self, session_id: str) -> SessionState | None: ...

    @abc.abstractmethod
    async def save(self, state: SessionState) -> None: ...


class StaleSession(Exception):
    """Another turn saved the session since this one loaded it."""


class InMemorySessionStore(SessionStore):
    def __init__(self, ttl_s: float) -> None:
        self._ttl_s = ttl_s
        self._states: dict[str, SessionState] = {}
        self._lock = asyncio.Lock()

    async def load(self, session_id: str) -> SessionState | None:
        state = self._states.get(session_id)
        if state is None or time.time() - state.updated_at > self._ttl_s:
            return None
        return state.model_copy(deep=True)

    async def save(self, state: SessionState) -> None:
        async with self._lock:
            current = self._states.get(state.session_id)
            if current is not None and current.version != state.version:
                raise StaleSession(state.session_id)
            stored = state.model_copy(deep=True)
            stored.version = state.version + 1
            stored.updated_at = time.time()
            self._states[state.session_id] = stored
            state.version = stored.version
