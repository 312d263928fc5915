"""The OpenAPI document is true to the wire (no Ray): the envelope under every error status, the bearer scheme, the
constraints in the schemas, 405 with Allow, and schemathesis over the app served by uvicorn on 127.0.0.1 (fake
models, the real store on the session's PostgreSQL) finds nothing."""

from __future__ import annotations

import re
import sys

import httpx
import pytest

from engine.media_keys import key_from_source_url, new_key
from protocol.chat_stream import ChatStreamLine
from protocol.media import source_url_pattern
from protocol.rest import EMAIL_SHAPE, RegisterRequest
from protocol.strings import NOT_BLANK, WHITESPACE
from store import write_gate
from tests.support.fakes import api_for, base_settings
from tests.support.openapi_checks import assert_conforms
from tests.support.store_app import served as serve_in_thread
from tests.support.store_app import store_app

ENVELOPE = {"$ref": "#/components/schemas/ErrorEnvelope"}
# the OpenAI-compatible routes: a client's api_key is not a Baton account (local mode)
TOKEN_FREE = {
    ("/health", "get"),
    ("/api/v1/auth/register", "post"),
    ("/api/v1/auth/login", "post"),
    ("/api/v1/metrics/summary", "get"),
    ("/v1/models", "get"),
    ("/v1/chat/completions", "post"),
    ("/api/v1/calendar/feeds/{token}.ics", "get"),  # the token in the path is the feed's secret
}
LOCAL_MODE = {
    ("/api/v1/agent/chat", "post"),
    ("/api/v1/agent/fill-slots", "post"),
    ("/api/v1/agent/chat-stream", "post"),
    ("/api/v1/media/upload", "post"),
}
MEDIA_READ = ("/api/v1/media/{kind}/{file_name}", "get")


@pytest.fixture(scope="module")
def served(postgres, tmp_path_factory):
    """The app under uvicorn on a free port of 127.0.0.1, in a thread of this process: {"url", "api", "settings"}."""
    settings = base_settings()
    api = store_app(postgres["dsn"], tmp_path_factory.mktemp("media"), settings)
    with serve_in_thread(api) as url:
        yield {"url": url, "api": api, "settings": settings}


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
        for method, path, allowed in [
            ("GET", "/api/v1/agent/chat", "POST"),
            ("DELETE", "/health", "GET"),
            ("GET", "/api/v1/media/upload", "POST"),
            ("OPTIONS", "/api/v1/auth/me", "GET"),
            ("PUT", f"/api/v1/long-goals/{'0' * 8}-0000-4000-8000-{'0' * 12}", "GET"),
        ]:
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
    api = api_for(object(), settings.model_copy(update={"media": media}))
    branches = api.openapi()["components"]["schemas"]["ChatRequest"]["anyOf"]
    image = next(b for b in branches if b["properties"]["modality"]["const"] == "image_ocr")["properties"]["source_url"]
    assert image["pattern"] == source_url_pattern("image", "https://baton.example/")
    key = new_key("image", "png")
    for url in (
        f"/api/v1/media/{key}",
        f"https://baton.example/api/v1/media/{key}",
        f"https://evil.example/api/v1/media/{key}",
        f"/api/v1/media/{key}x",
        f"/api/v1/media/{new_key('audio', 'wav')}",
    ):
        named = key_from_source_url(url, media.public_base_url)
        assert (re.search(image["pattern"], url) is not None) == (named is not None and named.startswith("image/")), url


def test_not_blank_is_pythons_strip_and_no_nul():
    whitespace = re.compile(f"[{WHITESPACE}]")
    assert all((whitespace.fullmatch(c) is not None) == c.isspace() for c in map(chr, range(sys.maxunicode + 1)))
    for text in ("a", " a ", "\u3000\n", "", "\ufeff", "\x1c", "a\x00", "  开  "):
        assert (re.search(NOT_BLANK, text) is not None) == (bool(text.strip()) and "\x00" not in text), repr(text)


@pytest.mark.parametrize(
    "email", ["a@b.c", " A@B.CO ", "a@b", "@b.c", "a b@c.d", "a@@b.c", "a@b.c@d", "a@.", "a\x00@b.c"]
)
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
        token = client.post(
            "/api/v1/auth/register", json={"email": "nul@openapi.test", "password": "long enough"}
        ).json()
        auth = {"Authorization": f"Bearer {token['access_token']}"}
        write = {
            "action": "update",
            "target_type": "profile",
            "target_id": token["user_id"],
            "preview_text": "x",
            "payload": {"profile_data": {"likes": ["tea", "co\x00ffee"]}},
        }
        for resp in (
            client.post("/api/v1/agent/chat", json={"user_id": "u\x00", "text": "打开车窗"}),
            client.post("/api/v1/agent/fill-slots", json={"user_id": "u", "session_id": "s", "slots": {"k\x00": 1}}),
            client.post(
                "/api/v1/auth/register", json={"email": "a@b.c", "password": "long enough", "display_name": "\x00"}
            ),
            client.post("/api/v1/write-requests", json=write, headers=auth),
            client.get(f"/api/v1/media/image/{'0' * 32}.png", params={"user_id": "u\x00"}),
        ):
            assert resp.status_code == 422, resp.text


def test_schemathesis_finds_nothing(served, tmp_path):
    assert_conforms(served["url"], tmp_path, max_examples=10)
