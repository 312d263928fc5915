"""The store of an app run by a plain ASGI server (the monolith baseline, in-process tests) rather than the Serve
ingress: opened in the server's lifespan, because the PostgreSQL pool belongs to the server's event loop."""
from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from fastapi import FastAPI

from engine.settings import Settings
from serve_app.auth import Auth
from serve_app.conversation import build_conversation
from serve_app.rest_api import Persistence
from serve_app.stored_chat import StoredChat
from store.database import Database


def open_store_on_start(api: FastAPI, dsn: str, settings: Settings, auth: Auth) -> None:
    """On start, open the pool on `dsn` and give `api.state.serving` its persistence (REST, stored chat) and the
    WebSocket conversation; on stop, close the pool."""

    @asynccontextmanager
    async def with_store(app: FastAPI) -> AsyncIterator[None]:
        db = await Database.open(dsn, settings.store)
        serving = app.state.serving
        serving.persistence = Persistence(db=db, auth=auth, chat=StoredChat(serving.engine, db, settings),
                                          settings=settings)
        serving.conversation = build_conversation(serving)
        try:
            yield
        finally:
            await db.close()

    api.router.lifespan_context = with_store
