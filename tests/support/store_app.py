"""The HTTP app with the real store on the session's PostgreSQL and fake models, served by uvicorn on 127.0.0.1 in a
thread of the test process (no Ray): what the OpenAPI and the auth-posture tests drive over real sockets."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from config.settings import Settings
from engine.media import MediaClient
from engine.plugins import PluginRegistry
from engine.session import InMemorySessionStore
from engine.turn import TurnEngine
from media.store import LocalStore, ObjectNotFound
from media.uploads import MediaUploads
from protocol.media import Recognition
from serve_app.auth import Auth
from serve_app.http.api import create_api
from serve_app.state import ModelClients, build_state, on_start
from tests.support.fakes import FakeLlm, FakeModelClient, pack

SECRET = "store-app-test-secret" * 3


class StoreMedia(MediaClient):
    """ASR and OCR answered from the store alone: a missing or foreign object is refused as the recognizers refuse
    it, an existing one reads as a command (the recognizers themselves are not what these tests are about)."""

    def __init__(self, store: LocalStore) -> None:
        self.store = store

    async def _recognize(self, object_key: str, user_id: str) -> Recognition:
        try:
            owner = self.store.head(object_key).owner
        except ObjectNotFound:
            return Recognition(status="not_found", reason="no such object")
        return (
            Recognition(status="ok", recognized_text="打开车窗")
            if owner == user_id
            else Recognition(status="forbidden")
        )

    async def transcribe(self, object_key: str, *, user_id: str, deadline: float) -> Recognition:
        return await self._recognize(object_key, user_id)

    async def ocr(self, object_key: str, *, user_id: str, deadline: float) -> Recognition:
        return await self._recognize(object_key, user_id)


def store_app(dsn: str, media_dir: Path, settings: Settings):
    """The app (cockpit pack, fake models, media from the store); its pool opens in uvicorn's lifespan."""
    store = LocalStore(media_dir)
    engine_models = FakeModelClient()
    engine = TurnEngine(
        pack=pack("cockpit"),
        settings=settings,
        models=engine_models,
        plugins=PluginRegistry(),
        sessions=InMemorySessionStore(ttl_s=settings.session.ttl_s),
        media=StoreMedia(store),
    )
    api = create_api()
    models = ModelClients(nlu=engine_models, llm=FakeLlm())
    on_start(
        api,
        lambda db: build_state(
            settings,
            models,
            db,
            engine=engine,
            auth=Auth(settings.auth, SECRET),
            uploads=MediaUploads(store=store, cfg=settings.media),
        ),
        dsn,
        settings,
    )
    return api


@contextmanager
def served(api) -> Iterator[str]:
    """`api` under uvicorn on a free port of 127.0.0.1, in a thread of this process; yields its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    # a connection a test left open must not hold the server (and its thread's event loop) past the module
    server = uvicorn.Server(uvicorn.Config(api, log_level="warning", lifespan="on", timeout_graceful_shutdown=2))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        assert thread.is_alive() and time.time() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        if thread.is_alive():  # still waiting on something: stop waiting
            server.force_exit = True
            thread.join(timeout=10)
        sock.close()
