"""The OpenAPI document is true to the wire (no Ray): the envelope under every error status, the bearer scheme, the
constraints in the schemas, 405 with Allow, and schemathesis over the app served by uvicorn on 127.0.0.1 (fake
models, the real store on the session's PostgreSQL) finds nothing."""
from __future__ import annotations

import re
import socket
import sys
import threading
import time
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
import uvicorn
from test_openai_api import FakeLlm
from fakes import FakeModelClient, base_settings, pack
from openapi_checks import assert_conforms

from engine.media import MediaClient
from engine.plugins import PluginRegistry
from engine.session import InMemorySessionStore
from engine.turn import TurnEngine
from media.keys import key_from_source_url, new_key
from media.store import LocalStore, ObjectNotFound
from media.uploads import MediaUploads
from protocol.http_chat import ChatStreamLine
from protocol.media import Recognition, source_url_pattern
from protocol.rest import EMAIL_SHAPE, RegisterRequest
from protocol.strings import NOT_BLANK, WHITESPACE
from serve_app.admission import Admission
from serve_app.auth import Auth
from serve_app.http_api import Serving, create_api
from serve_app.rest_api import Persistence
from serve_app.stored_chat import StoredChat
from store import write_gate
from store.database import Database

ENVELOPE = {"$ref": "#/components/schemas/ErrorEnvelope"}
# the OpenAI-compatible routes: a client's api_key is not a Baton account (local mode)
TOKEN_FREE = {("/health", "get"), ("/api/v1/auth/register", "post"), ("/api/v1/auth/login", "post"),
              ("/api/v1/metrics/summary", "get"), ("/v1/models", "get"), ("/v1/chat/completions", "post")}
LOCAL_MODE = {("/api/v1/agent/chat", "post"), ("/api/v1/agent/fill-slots", "post"), ("/api/v1/agent/chat-stream", "post"),
              ("/api/v1/media/upload", "post")}
MEDIA_READ = ("/api/v1/media/{kind}/{file_name}", "get")


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
        return Recognition(status="ok", recognized_text="打开车窗") if owner == user_id else Recognition(status="forbidden")

    async def transcribe(self, object_key: str, *, user_id: str, deadline: float) -> Recognition:
        return await self._recognize(object_key, user_id)

    async def ocr(self, object_key: str, *, user_id: str, deadline: float) -> Recognition:
        return await self._recognize(object_key, user_id)


def _app(dsn: str, media_dir: Path):
    settings = base_settings()
    store = LocalStore(media_dir)
    engine = TurnEngine(pack=pack("cockpit"), settings=settings, models=FakeModelClient(), plugins=PluginRegistry(),
                        sessions=InMemorySessionStore(ttl_s=settings.session.ttl_s), media=StoreMedia(store))
    api = create_api()
    api.state.serving = Serving(engine=engine, admission=Admission(settings.serving.admission),
                                uploads=MediaUploads(store=store, cfg=settings.media), llm=FakeLlm())

    @asynccontextmanager
    async def with_store(app):
        # the pool belongs to uvicorn's event loop, so it opens here
        db = await Database.open(dsn, settings.store)
        app.state.serving.persistence = Persistence(db=db, auth=Auth(settings.auth, "openapi-test-secret" * 3),
                                                    chat=StoredChat(engine, db, settings), settings=settings)
        try:
            yield
        finally:
            await db.close()

    api.router.lifespan_context = with_store
    return api, settings


@pytest.fixture(scope="module")
def served(postgres, tmp_path_factory):
    """The app under uvicorn on a free port of 127.0.0.1, in a thread of this process: {"url", "api", "settings"}."""
    api, settings = _app(postgres["dsn"], tmp_path_factory.mktemp("media"))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(api, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not server.started:
        assert thread.is_alive() and time.time() < deadline, "uvicorn did not start"
        time.sleep(0.05)
    try:
        yield {"url": f"http://127.0.0.1:{sock.getsockname()[1]}", "api": api, "settings": settings}
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()


@pytest.fixture(scope="module")
def document(served) -> dict:
    return httpx.get(f"{served['url']}/openapi.json").json()


def _operations(document: dict):
    for path, methods in document["paths"].items():
        for method, operation in methods.items():
            yield path, method, operation


def test_the_bearer_scheme_and_the_routes_that_take_it(document):
    scheme = document["components"]["securitySchemes"]["bearerAuth"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer") and "Local mode" in scheme["description"]
    for path, method, operation in _operations(document):
        security = operation.get("security")
        if (path, method) in TOKEN_FREE:
            assert security is None, path
        elif (path, method) in LOCAL_MODE:
            assert security == [{"bearerAuth": []}, {}], path  # a token, or none (local mode)
        elif (path, method) == MEDIA_READ:
            assert security == [{"bearerAuth": []}, {"localUserId": []}, {"localUserHeader": []}]
        else:
            assert security == [{"bearerAuth": []}], path
            assert "401" in operation["responses"], path


def test_every_error_status_is_documented_with_the_envelope(document):
    assert "HTTPValidationError" not in document["components"]["schemas"]
    for path, method, operation in _operations(document):
        if operation.get("parameters") or operation.get("requestBody"):
            assert "422" in operation["responses"], (path, method)
        for status, response in operation["responses"].items():
            if status >= "400" and path != "/health":  # /health's 503 is its own body, with the reason
                assert response["content"] == {"application/json": {"schema": ENVELOPE}}, (path, method, status)


def test_a_405_names_the_methods_of_its_path(served):
    with httpx.Client(base_url=served["url"]) as client:
        for method, path, allowed in [("GET", "/api/v1/agent/chat", "POST"), ("DELETE", "/health", "GET"),
                                      ("GET", "/api/v1/media/upload", "POST"), ("OPTIONS", "/api/v1/auth/me", "GET"),
                                      ("PUT", f"/api/v1/long-goals/{'0' * 8}-0000-4000-8000-{'0' * 12}", "GET")]:
            resp = client.request(method, path)
            assert resp.status_code == 405 and resp.headers["allow"] == allowed, (method, path, resp.headers)
            assert resp.json()["error"]["code"] == "method_not_allowed"


def test_each_chat_stream_line_is_a_documented_event(served, document):
    content = document["paths"]["/api/v1/agent/chat-stream"]["post"]["responses"]["200"]["content"]
    assert content == {"application/x-ndjson": {"schema": {"$ref": "#/components/schemas/ChatStreamLine"}}}
    with httpx.Client(base_url=served["url"], timeout=30) as client:
        resp = client.post("/api/v1/agent/chat-stream", json={"user_id": "stream", "text": "打开车窗"})
    assert resp.status_code == 200 and resp.headers["content-type"].startswith("application/x-ndjson")
    events = [ChatStreamLine.model_validate_json(line).root.event for line in resp.text.splitlines()]
    assert events and events[-1] in ("final", "error")


def test_the_text_limit_in_the_document_is_the_settings(served, document):
    limit = served["settings"].max_text_chars
    text = document["components"]["schemas"]["ChatRequest"]["properties"]["text"]["anyOf"][0]
    assert text["maxLength"] == limit and text["pattern"] == NOT_BLANK
    with httpx.Client(base_url=served["url"], timeout=30) as client:
        assert client.post("/api/v1/agent/chat", json={"user_id": "limit", "text": "开" * limit}).status_code == 200
        refused = client.post("/api/v1/agent/chat", json={"user_id": "limit", "text": "开" * (limit + 1)})
    assert refused.status_code == 422 and refused.json()["error"]["code"] == "text_too_long"


def test_source_urls_under_a_public_base_url_are_documented_too():
    settings = base_settings()
    media = settings.media.model_copy(update={"public_base_url": "https://baton.example/"})
    api = create_api()
    api.state.serving = Serving(engine=None, admission=None, uploads=MediaUploads(store=None, cfg=media))
    branches = api.openapi()["components"]["schemas"]["ChatRequest"]["anyOf"]
    image = next(b for b in branches if b["properties"]["modality"]["const"] == "image_ocr")["properties"]["source_url"]
    assert image["pattern"] == source_url_pattern("image", "https://baton.example/")
    key = new_key("image", "png")
    for url in (f"/api/v1/media/{key}", f"https://baton.example/api/v1/media/{key}", f"https://evil.example/api/v1/media/{key}",
                f"/api/v1/media/{key}x", f"/api/v1/media/{new_key('audio', 'wav')}"):
        named = key_from_source_url(url, media.public_base_url)
        assert (re.search(image["pattern"], url) is not None) == (named is not None and named.startswith("image/")), url


def test_not_blank_is_pythons_strip_and_no_nul():
    whitespace = re.compile(f"[{WHITESPACE}]")
    assert all((whitespace.fullmatch(c) is not None) == c.isspace() for c in map(chr, range(sys.maxunicode + 1)))
    for text in ("a", " a ", "\u3000\n", "", "\ufeff", "\x1c", "a\x00", "  开  "):
        assert (re.search(NOT_BLANK, text) is not None) == (bool(text.strip()) and "\x00" not in text), repr(text)


@pytest.mark.parametrize("email", ["a@b.c", " A@B.CO ", "a@b", "@b.c", "a b@c.d", "a@@b.c", "a@b.c@d", "a@.", "a\x00@b.c"])
def test_the_documented_email_shape_is_the_validators(email):
    try:
        RegisterRequest(email=email, password="long enough")
        accepted = True
    except ValueError:
        accepted = False
    assert accepted == (re.search(EMAIL_SHAPE, email) is not None)


def test_the_write_requests_documented_are_the_gates(document):
    branches = document["components"]["schemas"]["WriteRequestCreate"]["anyOf"]
    pairs = {(b["properties"]["action"]["const"], b["properties"]["target_type"]["const"]) for b in branches}
    assert pairs == write_gate.SUPPORTED


def test_a_nul_anywhere_is_refused_before_the_store(served):
    with httpx.Client(base_url=served["url"], timeout=30) as client:
        token = client.post("/api/v1/auth/register", json={"email": "nul@openapi.test", "password": "long enough"}).json()
        auth = {"Authorization": f"Bearer {token['access_token']}"}
        write = {"action": "update", "target_type": "profile", "target_id": token["user_id"], "preview_text": "x",
                 "payload": {"profile_data": {"likes": ["tea", "co\x00ffee"]}}}
        for resp in (client.post("/api/v1/agent/chat", json={"user_id": "u\x00", "text": "打开车窗"}),
                     client.post("/api/v1/agent/fill-slots", json={"user_id": "u", "session_id": "s", "slots": {"k\x00": 1}}),
                     client.post("/api/v1/auth/register", json={"email": "a@b.c", "password": "long enough", "display_name": "\x00"}),
                     client.post("/api/v1/write-requests", json=write, headers=auth),
                     client.get(f"/api/v1/media/image/{'0' * 32}.png", params={"user_id": "u\x00"})):
            assert resp.status_code == 422, resp.text


def test_schemathesis_finds_nothing(served, tmp_path):
    assert_conforms(served["url"], tmp_path, max_examples=10)
