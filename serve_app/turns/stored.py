"""Chat turns against the PostgreSQL store: lease the session, run the engine, then log and save in one transaction.

Guarantees: a turn that carries a known client_message_id returns the stored reply and runs nothing; two
turns on one session never run at once (the second waits, then gets `session_busy`); two turns with the same
client_message_id and no session_id share one derived session, so one runs and the other gets its reply; a
turn's session state, the user's world, its messages and its stored reply commit together or not at all;
with the database down nothing runs. Every phase runs inside the turn's deadline, stamped on arrival; the commit
starts only inside it and, once sent, is never cut off, so a saved turn is never answered "nothing was saved".
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from uuid import UUID

from config.settings import Settings
from engine.deadline import Deadline, StageTimeout
from engine.errors import Overloaded
from engine.events import TurnListener
from engine.plugins import TurnWorld, World
from engine.session import SessionState, StaleSession
from engine.turn import TurnEngine
from engine.turn_context import TurnContext, timings_of
from protocol.http_chat import ChatRequest, ChatResponse, FillSlotsRequest
from protocol.media import InputModality
from serve_app.turns.turn_memory import historian, profiler, recaller, remember
from store import conversation, sessions, turn_log, worlds
from store.database import Database
from store.errors import Conflict, SessionBusy, SessionOfOtherAssistant, TurnExists
from store.ids import new_id
from store.sessions import SessionLease
from store.turn_commit import commit_turn
from store.worlds import WorldChanged

RELEASE_TIMEOUT_S = 2.0
LEASE_SLACK_S = 0.1
DERIVED_SESSIONS = uuid.UUID("6f1c2a4e-8d3b-4e59-9a7c-0b5d1e2f3a4c")
logger = logging.getLogger(__name__)


def derived_session_id(user_id: UUID, client_message_id: str) -> str:
    """The session of a first message that names none: one per (user, client_message_id), so a retried first
    message finds the session its original leased — and its stored reply — instead of starting a second one."""
    return uuid.uuid5(DERIVED_SESSIONS, f"{user_id}/{client_message_id}").hex


@dataclass(frozen=True)
class UserInput:
    text: str
    modality: InputModality = "text"
    source_url: str | None = None
    message_ids: tuple[UUID, UUID] | None = None


class StoredChat:
    """The engine's turns over the store. The caller has checked the request (its modality) and who sent it."""

    def __init__(self, engine: TurnEngine, db: Database, settings: Settings) -> None:
        self._engine = engine
        self._db = db
        self._settings = settings
        self._waits = sessions.LeaseWaits()

    async def chat(
        self,
        body: ChatRequest,
        user_id: UUID,
        deadline: Deadline,
        listener: TurnListener | None = None,
        message_ids: tuple[UUID, UUID] | None = None,
    ) -> ChatResponse:
        """`message_ids`: the ids the user's message and the reply get in the log (default: new ones)."""
        cmid = body.client_message_id
        session_id = body.session_id or (derived_session_id(user_id, cmid) if cmid else new_id().hex)
        said = UserInput(
            text=body.text or "", modality=body.modality, source_url=body.source_url, message_ids=message_ids
        )
        try:
            async with self._leased(user_id, session_id, cmid, deadline, create=True) as turn:
                if turn.stored is not None:
                    return turn.stored
                state = turn.state or SessionState(session_id=session_id, user_id=body.user_id)
                state.claim(self._engine.pack.name)
                request = body.model_copy(update={"session_id": session_id})
                response = await self._engine.chat_on(state, request, turn.context(listener))
                return await turn.commit(response, state, said)
        except (TurnExists, WorldChanged) as exc:
            return await self._raced(user_id, cmid, exc)

    async def fill_slots(
        self, body: FillSlotsRequest, user_id: UUID, deadline: Deadline, message_ids: tuple[UUID, UUID] | None = None
    ) -> ChatResponse:
        said = UserInput(text=body.text if body.text is not None else _slots_text(body.slots), message_ids=message_ids)
        try:
            async with self._leased(user_id, body.session_id, body.client_message_id, deadline, create=False) as turn:
                if turn.stored is not None:
                    return turn.stored
                response = await self._engine.fill_slots_on(turn.state, body, turn.context())
                return await turn.commit(response, turn.state, said)
        except (TurnExists, WorldChanged) as exc:
            return await self._raced(user_id, body.client_message_id, exc)

    async def _raced(self, user_id: UUID, client_message_id: str | None, exc: Conflict) -> ChatResponse:
        """A turn whose commit lost to another turn with its client_message_id (on another session: both ran, one
        saved) answers what that one saved; a world changed by an unrelated turn stays the 409 it is."""
        if client_message_id is not None:
            async with self._db.connection() as conn:
                stored = await conversation.stored_reply(conn, user_id, client_message_id)
            if stored is not None:
                return ChatResponse.model_validate(stored)
        raise exc

    @asynccontextmanager
    async def _leased(
        self, user_id: UUID, session_id: str, client_message_id: str | None, deadline: Deadline, *, create: bool
    ) -> AsyncIterator[LeasedTurn]:
        """The session leased for one turn (None for fill-slots on an unknown session), or the stored reply of a turn
        that already ran; a lease the turn did not commit is handed back, and a budget that ran out anywhere inside
        is `Overloaded` (nothing was saved)."""
        try:
            stored = await self._stored(user_id, client_message_id, deadline)
        except StageTimeout as exc:
            raise Overloaded(
                f"The turn's budget ran out waiting for the database ({exc.stage}); nothing ran, retry."
            ) from exc
        if stored is not None:
            yield LeasedTurn(self, user_id, session_id, client_message_id, None, deadline, stored=stored)
            return
        lease = await self._lease(user_id, session_id, deadline, create=create)
        turn = LeasedTurn(self, user_id, session_id, client_message_id, lease, deadline)
        try:
            if turn.state is not None and not turn.state.claim(self._engine.pack.name):  # another assistant's
                raise SessionOfOtherAssistant(turn.state.other_pack_message(self._engine.pack.name), field="session_id")
            # a duplicate that waited for the original's lease finds the original's reply here
            turn.stored = await self._stored(user_id, client_message_id, deadline)
            yield turn
        except StageTimeout as exc:
            raise Overloaded(f"The turn's budget ran out in {exc.stage}; nothing was saved, retry.") from exc
        except StaleSession as exc:
            raise SessionBusy(
                f"Session '{session_id}' was taken over by another turn; retry.", field="session_id"
            ) from exc
        finally:
            if lease is not None and not turn.committed:
                # the turn's answer (or its error) stands whatever happens here: a lease not handed back lapses
                await self._release_quietly(user_id, session_id, lease.token)
            self._waits.ended(user_id, session_id)

    async def _lease(self, user_id: UUID, session_id: str, deadline: Deadline, *, create: bool) -> SessionLease | None:
        budgets = self._settings.budgets
        token = uuid.uuid4()
        try:
            # waiting for a busy session ends at the lease budget (409 session_busy); the phase itself may run a
            # little longer, so a statement in flight at that moment does not turn the answer into a timeout
            async with deadline.phase("lease", budgets.stage_s("lease") + LEASE_SLACK_S):
                return await sessions.acquire(
                    self._db,
                    session_id,
                    user_id,
                    ttl_s=self._settings.session.ttl_s,
                    create=create,
                    wait_until=deadline.stage_at(budgets.stage_s("lease")),
                    token=token,
                    waits=self._waits,
                )
        except StageTimeout as exc:
            if exc.stage == "lease":
                # the statement may have leased the session as the phase gave up: hand the lease back, or every
                # retry of this turn would meet session_busy until the lease lapsed (seconds)
                await self._release_quietly(user_id, session_id, token)
            raise Overloaded(
                f"The turn's budget ran out waiting for the database ({exc.stage}); nothing ran, retry."
            ) from exc

    async def _release_quietly(self, user_id: UUID, session_id: str, token: UUID) -> None:
        try:
            await asyncio.wait_for(sessions.release_token(self._db, user_id, session_id, token), RELEASE_TIMEOUT_S)
        except Exception:  # the turn is answered either way; a lease not handed back lapses on its own
            logger.warning("could not hand back the lease of session %s", session_id, exc_info=True)

    async def _stored(self, user_id: UUID, client_message_id: str | None, deadline: Deadline) -> ChatResponse | None:
        """The reply an earlier turn with this client_message_id got (a `store` phase), or None."""
        if client_message_id is None:
            return None
        async with deadline.phase("store", self._settings.budgets.stage_s("store")):
            async with self._db.connection() as conn:
                stored = await conversation.stored_reply(conn, user_id, client_message_id)
        return ChatResponse.model_validate(stored) if stored is not None else None


class LeasedTurn:
    """One turn between its lease and its commit: the session state it found, the world it may change, the commit."""

    def __init__(
        self,
        chat: StoredChat,
        user_id: UUID,
        session_id: str,
        client_message_id: str | None,
        lease: SessionLease | None,
        deadline: Deadline,
        *,
        stored: ChatResponse | None = None,
    ) -> None:
        self._chat, self._user_id, self._session_id = chat, user_id, session_id
        self._cmid, self._lease, self._deadline = client_message_id, lease, deadline
        self._world: TurnWorld | None = None
        self._loaded: worlds.Versioned | None = None
        self._ctx: TurnContext | None = None
        self.stored = stored
        self.committed = False
        self.state = SessionState.model_validate(lease.state) if lease is not None and lease.state else None

    def context(self, listener: TurnListener | None = None) -> TurnContext:
        # the lease brought the world along; a turn without a lease (fill-slots on an unknown session) reads it
        self._world = TurnWorld(self._load_world, at_hand=self._lease is not None)
        db, settings = self._chat._db, self._chat._settings
        self._ctx = TurnContext(
            deadline=self._deadline,
            world=self._world,
            listener=listener,
            recall=recaller(db, settings.llm, self._user_id),
            profile=profiler(db, self._user_id),
            history=historian(db, self._user_id, self._session_id, settings.compaction.history_messages),
        )
        return self._ctx

    async def _load_world(self) -> World:
        lease = self._lease
        self._loaded = (
            worlds.leased(lease.world, lease.world_version)
            if lease is not None
            else await worlds.load(self._chat._db, self._user_id)
        )
        return self._loaded.world

    async def commit(self, response: ChatResponse, state: SessionState | None, said: UserInput) -> ChatResponse:
        """Log, save and store the turn in one statement. It starts only inside the budget (its reserve was held back
        from the models), and once its statement is sent it is not cut off: a commit cancelled in flight may still
        land, and a turn that was saved must never be answered "nothing was saved"."""
        chat, deadline = self._chat, self._deadline
        settings = chat._settings
        if deadline.timeout_for(settings.budgets.stage_s("commit"), final=True) <= 0:
            raise StageTimeout("commit", 0.0)
        changed = self._world is not None and self._world.changed
        with deadline.measure("commit"):
            cmid = self._cmid or turn_log.new_client_message_id()
            question = self._lease.question if self._lease is not None else None
            # a voice or image message is logged as what was recognized, with the URL of the original media
            text = said.text if said.modality == "text" else (response.recognized_text or "")
            asked_id, reply_id = said.message_ids or (new_id(), new_id())
            asked = turn_log.user_message(
                text,
                session_id=self._session_id,
                client_message_id=cmid,
                question=question,
                modality=said.modality,
                source_url=said.source_url,
                message_id=asked_id,
            )
            reply = turn_log.reply_message(
                response,
                now=turn_log.utc_now(),
                question_ttl_s=settings.database.clarification_ttl_s,
                message_id=reply_id,
            )
            # a repeat gets the reply as stored here: the turn with its timings up to its commit (the live answer's
            # timings also count the commit)
            response.timings = timings_of(deadline)
            async with chat._db.connection() as conn:
                await commit_turn(
                    conn,
                    user_id=self._user_id,
                    session_id=self._session_id,
                    lease=self._lease,
                    state=state.model_dump(mode="json") if state is not None else None,
                    world=self._loaded if changed else None,
                    question_id=question.id if question is not None else None,
                    asked=asked,
                    reply=reply,
                    client_message_id=cmid,
                    response=response.model_dump(mode="json"),
                )
        if self._ctx is not None and self._ctx.vector is not None:
            remember(chat._db, self._user_id, asked_id, self._ctx.vector)
        self.committed = self._lease is not None and state is not None
        response.timings = timings_of(deadline)
        return response


def _slots_text(slots: dict[str, Any] | None) -> str:
    return " ".join(f"{k}={v}" for k, v in (slots or {}).items())
