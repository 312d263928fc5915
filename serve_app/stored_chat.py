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
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from uuid import UUID

from engine.deadline import Deadline, StageTimeout
from engine.errors import Overloaded
from engine.events import TurnListener
from engine.media import check_modality
from engine.plugins import TurnWorld
from engine.session import SessionState, StaleSession
from engine.settings import Settings
from engine.turn import TurnContext, TurnEngine, timings_of
from protocol.http_chat import ChatRequest, ChatResponse, FillSlotsRequest
from protocol.store import InputModality
from store import conversation, memory, sessions, turn_log, worlds
from store.turn_commit import commit_turn
from store.database import Database
from store.ids import new_id
from store.errors import SessionBusy

EngineRun = Callable[[SessionState | None, TurnContext], Awaitable[ChatResponse]]
RELEASE_TIMEOUT_S = 2.0
LEASE_SLACK_S = 0.1
DERIVED_SESSIONS = uuid.UUID("6f1c2a4e-8d3b-4e59-9a7c-0b5d1e2f3a4c")
logger = logging.getLogger(__name__)
_REMEMBERING: set[asyncio.Task] = set()  # vectors being kept after their turn answered


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
    def __init__(self, engine: TurnEngine, db: Database, settings: Settings) -> None:
        self._engine = engine
        self._db = db
        self._settings = settings

    async def chat(self, body: ChatRequest, user_id: UUID, deadline: Deadline, listener: TurnListener | None = None,
                   message_ids: tuple[UUID, UUID] | None = None) -> ChatResponse:
        """`message_ids`: the ids the user's message and the reply get in the log (default: new ones)."""
        check_modality(body)  # before anything is leased or written
        cmid = body.client_message_id
        session_id = body.session_id or (derived_session_id(user_id, cmid) if cmid else new_id().hex)
        request = body.model_copy(update={"session_id": session_id})
        said = UserInput(text=body.text or "", modality=body.modality, source_url=body.source_url, message_ids=message_ids)
        return await self._turn(user_id, session_id, cmid, said, deadline, create=True,
                                new_state=lambda: SessionState(session_id=session_id, user_id=body.user_id),
                                run=lambda state, ctx: self._engine.chat_on(state, request, ctx), listener=listener)

    async def fill_slots(self, body: FillSlotsRequest, user_id: UUID, deadline: Deadline,
                         message_ids: tuple[UUID, UUID] | None = None) -> ChatResponse:
        said = UserInput(text=body.text if body.text is not None else _slots_text(body.slots), message_ids=message_ids)
        return await self._turn(user_id, body.session_id, body.client_message_id, said, deadline, create=False,
                                new_state=None, run=lambda state, ctx: self._engine.fill_slots_on(state, body, ctx))

    async def _turn(self, user_id: UUID, session_id: str, client_message_id: str | None, said: UserInput, deadline: Deadline, *,
                    create: bool, new_state: Callable[[], SessionState] | None, run: EngineRun,
                    listener: TurnListener | None = None) -> ChatResponse:
        budgets = self._settings.budgets
        token = uuid.uuid4()
        try:
            stored = await self._stored(user_id, client_message_id, deadline)
            if stored is not None:
                return stored
            # waiting for a busy session ends at the lease budget (409 session_busy); the phase itself may run a
            # little longer, so a statement in flight at that moment does not turn the answer into a timeout
            async with deadline.phase("lease", budgets.stage_s("lease") + LEASE_SLACK_S):
                lease = await sessions.acquire(self._db, session_id, user_id, ttl_s=self._settings.session.ttl_s, create=create,
                                               wait_until=deadline.stage_at(budgets.stage_s("lease")), token=token)
        except StageTimeout as exc:
            if exc.stage == "lease":
                # the statement may have leased the session as the phase gave up: hand the lease back, or every
                # retry of this turn would meet session_busy until the lease lapsed (seconds)
                await self._release_quietly(session_id, token)
            raise Overloaded(f"The turn's budget ran out waiting for the database ({exc.stage}); nothing ran, retry.") from exc
        committed = False
        try:
            # a duplicate that waited for the original's lease finds the original's reply here
            stored = await self._stored(user_id, client_message_id, deadline)
            if stored is not None:
                return stored
            if lease is not None and lease.state:
                state = SessionState.model_validate(lease.state)
            else:
                state = new_state() if new_state is not None else None
            loaded: list[worlds.Versioned] = []

            async def load_world():
                # the lease brought the world along; a turn without a lease (fill-slots on an unknown session) reads it
                loaded.append(worlds.leased(lease.world, lease.world_version) if lease is not None
                              else await worlds.load(self._db, user_id))
                return loaded[0].world

            ctx = TurnContext(deadline=deadline, world=TurnWorld(load_world, at_hand=lease is not None),
                              listener=listener, recall=self._recaller(user_id))
            response = await run(state, ctx)
            # the commit starts only inside the budget (its reserve was held back from the models), and once its
            # statement is sent it is not cut off: a commit cancelled in flight may still land, and a turn that
            # was saved must never be answered "nothing was saved"
            if deadline.timeout_for(budgets.stage_s("commit"), final=True) <= 0:
                raise StageTimeout("commit", 0.0)
            with deadline.measure("commit"):
                asked_id = await self._commit(user_id, session_id, lease, state, response, said, client_message_id,
                                              loaded[0] if loaded and ctx.world.changed else None, deadline)
            if ctx.vector is not None:
                self._remember(user_id, asked_id, ctx.vector)
            committed = lease is not None and state is not None
            response.timings = timings_of(deadline)
            return response
        except StageTimeout as exc:
            raise Overloaded(f"The turn's budget ran out in {exc.stage}; nothing was saved, retry.") from exc
        except StaleSession as exc:
            raise SessionBusy(f"Session '{session_id}' was taken over by another turn; retry.", field="session_id") from exc
        finally:
            if lease is not None and not committed:
                await asyncio.wait_for(sessions.release(self._db, lease), RELEASE_TIMEOUT_S)

    async def _release_quietly(self, session_id: str, token: UUID) -> None:
        try:
            await asyncio.wait_for(sessions.release_token(self._db, session_id, token), RELEASE_TIMEOUT_S)
        except Exception:  # the turn is answered 503 either way; a lease not handed back lapses on its own
            logger.warning("could not hand back the lease of session %s", session_id, exc_info=True)

    async def _commit(self, user_id, session_id, lease, state, response, said, client_message_id, world,
                      deadline: Deadline) -> UUID:
        """Log, save and store the turn in one statement; returns the id the user's message got."""
        cmid = client_message_id or turn_log.new_client_message_id()
        question = lease.question if lease is not None else None
        # a voice or image message is logged as what was recognized, with the URL of the original media
        text = said.text if said.modality == "text" else (response.recognized_text or "")
        asked_id, reply_id = said.message_ids or (new_id(), new_id())
        asked = turn_log.user_message(text, session_id=session_id, client_message_id=cmid, question=question,
                                      modality=said.modality, source_url=said.source_url, message_id=asked_id)
        reply = turn_log.reply_message(response, now=turn_log.utc_now(), question_ttl_s=self._settings.store.clarification_ttl_s,
                                       message_id=reply_id)
        # a repeat gets the reply as stored here: the turn with its timings up to its commit (the live answer's
        # timings also count the commit)
        response.timings = timings_of(deadline)
        async with self._db.connection() as conn:
            await commit_turn(conn, user_id=user_id, session_id=session_id, lease=lease,
                              state=state.model_dump(mode="json") if state is not None else None, world=world,
                              question_id=question.id if question is not None else None, asked=asked, reply=reply,
                              client_message_id=cmid, response=response.model_dump(mode="json"))
        return asked_id

    def _recaller(self, user_id: UUID):
        """Semantic memory for this user's turn: their earlier messages near a vector (store/memory.py)."""
        llm = self._settings.llm
        if llm.memory_k == 0:
            return None

        async def recall(vector: tuple[float, ...], text: str) -> list[str]:
            async with self._db.connection() as conn:
                found = await memory.recall(conn, user_id=user_id, vector=vector, k=llm.memory_k,
                                            min_score=llm.memory_min_score, exclude=(text,))
            return [t for t, _ in found]

        return recall

    def _remember(self, user_id: UUID, message_id: UUID, vector: tuple[float, ...]) -> None:
        """Keep the logged message's vector, after the reply and off its path: memory is an aid, not part of the
        turn (a failure is logged, never the turn's)."""
        async def remember() -> None:
            try:
                async with self._db.connection() as conn:
                    await memory.remember(conn, user_id=user_id, message_id=message_id, vector=vector)
            except Exception:  # noqa: BLE001
                logger.warning("could not keep the vector of message %s", message_id, exc_info=True)

        task = asyncio.ensure_future(remember())
        _REMEMBERING.add(task)
        task.add_done_callback(_REMEMBERING.discard)

    async def _stored(self, user_id: UUID, client_message_id: str | None, deadline: Deadline) -> ChatResponse | None:
        """The reply an earlier turn with this client_message_id got (a `store` phase), or None."""
        if client_message_id is None:
            return None
        async with deadline.phase("store", self._settings.budgets.stage_s("store")):
            async with self._db.connection() as conn:
                stored = await conversation.stored_reply(conn, user_id, client_message_id)
        return ChatResponse.model_validate(stored) if stored is not None else None


def _slots_text(slots: dict | None) -> str:
    return " ".join(f"{k}={v}" for k, v in (slots or {}).items())
