"""Chat turns against the PostgreSQL store: lease the session, run the engine, then log and save in one transaction.

Guarantees: a turn that carries a known client_message_id returns the stored reply and runs nothing; two
turns on one session never run at once (the second waits, then gets `session_busy`); a turn's session state,
its messages and its stored reply commit together or not at all; with the database down nothing runs.
"""
from __future__ import annotations

import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from uuid import UUID

from engine.media import check_modality
from engine.session import SessionState, StaleSession
from engine.settings import Settings
from engine.turn import TurnEngine, add_store_timing
from protocol.http_chat import ChatRequest, ChatResponse, FillSlotsRequest
from protocol.store import InputModality
from store import conversation, sessions, turn_log
from store.database import Database
from store.errors import SessionBusy

TurnRunner = Callable[[SessionState | None], Awaitable[ChatResponse]]


@dataclass(frozen=True)
class UserInput:
    text: str
    modality: InputModality = "text"
    source_url: str | None = None


class StoredChat:
    def __init__(self, engine: TurnEngine, db: Database, settings: Settings) -> None:
        self._engine = engine
        self._db = db
        self._settings = settings

    async def chat(self, body: ChatRequest, user_id: UUID) -> ChatResponse:
        check_modality(body)  # before anything is leased or written
        session_id = body.session_id or uuid.uuid4().hex
        request = body.model_copy(update={"session_id": session_id})
        said = UserInput(text=body.text or "", modality=body.modality, source_url=body.source_url)
        return await self._turn(user_id, session_id, body.client_message_id, said, create=True,
                                new_state=lambda: SessionState(session_id=session_id, user_id=body.user_id),
                                run=lambda state: self._engine.chat_on(state, request))

    async def fill_slots(self, body: FillSlotsRequest, user_id: UUID) -> ChatResponse:
        said = UserInput(text=body.text if body.text is not None else _slots_text(body.slots))
        return await self._turn(user_id, body.session_id, body.client_message_id, said, create=False,
                                new_state=None, run=lambda state: self._engine.fill_slots_on(state, body))

    async def _turn(self, user_id: UUID, session_id: str, client_message_id: str | None, said: UserInput, *,
                    create: bool, new_state: Callable[[], SessionState] | None, run: TurnRunner) -> ChatResponse:
        if client_message_id is not None:
            stored = await self._stored(user_id, client_message_id)
            if stored is not None:
                return stored
        lease = await sessions.acquire(self._db, session_id, user_id, ttl_s=self._settings.session.ttl_s, create=create)
        committed = False
        try:
            if client_message_id is not None:
                # a duplicate that waited for the original's lease finds the original's reply here
                stored = await self._stored(user_id, client_message_id)
                if stored is not None:
                    return stored
            async with self._db.connection() as conn:
                await conversation.expire_questions(conn, user_id)
                question = await conversation.open_question(conn, user_id, session_id)
            if lease is not None and lease.state:
                state = SessionState.model_validate(lease.state)
            else:
                state = new_state() if new_state is not None else None
            response = await run(state)
            await self._commit(user_id, session_id, lease, state, response, said, client_message_id, question)
            committed = lease is not None and state is not None
            return response
        except StaleSession as exc:
            raise SessionBusy(f"Session '{session_id}' was taken over by another turn; retry.", field="session_id") from exc
        finally:
            if lease is not None and not committed:
                await sessions.release(self._db, lease)

    async def _commit(self, user_id, session_id, lease, state, response, said, client_message_id, question) -> None:
        cmid = client_message_id or turn_log.new_client_message_id()
        # a voice or image message is logged as what was recognized, with the URL of the original media
        text = said.text if said.modality == "text" else (response.recognized_text or "")
        asked = turn_log.user_message(text, session_id=session_id, client_message_id=cmid, question=question,
                                      modality=said.modality, source_url=said.source_url)
        reply = turn_log.reply_message(response, now=turn_log.utc_now(), question_ttl_s=self._settings.store.clarification_ttl_s)
        t0 = time.perf_counter()
        async with self._db.transaction() as conn:
            if lease is not None and state is not None:
                await sessions.commit(conn, lease, state.model_dump(mode="json"))
            if question is not None:
                await conversation.close_question(conn, user_id, question.id, "answered")
            await conversation.append(conn, user_id, [asked, reply])
            # the stored reply is the one returned now, so a repeat gets it byte for byte (its own insert is
            # the only store time not counted)
            add_store_timing(response, (time.perf_counter() - t0) * 1000.0)
            await conversation.store_reply(conn, user_id, cmid, session_id, asked.id, response.model_dump(mode="json"))

    async def _stored(self, user_id: UUID, client_message_id: str) -> ChatResponse | None:
        async with self._db.connection() as conn:
            stored = await conversation.stored_reply(conn, user_id, client_message_id)
        return ChatResponse.model_validate(stored) if stored is not None else None


def _slots_text(slots: dict | None) -> str:
    return " ".join(f"{k}={v}" for k, v in (slots or {}).items())
