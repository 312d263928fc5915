"""The AsyncAPI document of the WebSocket: every frame type, its schema from the wire models, a valid example."""

from __future__ import annotations

import pytest

from protocol.ws import CLIENT_PAYLOADS, SERVER_PAYLOADS, WsEnvelope
from serve_app.apidocs.asyncapi import EXAMPLES, asyncapi_document
from serve_app.ws.bounds import CLOSE_CODES


def test_every_frame_type_is_documented_with_a_schema():
    doc = asyncapi_document()
    messages = doc["components"]["messages"]
    assert {m["name"] for m in messages.values()} == set(CLIENT_PAYLOADS) | set(SERVER_PAYLOADS)
    assert doc["channels"]["conversation"]["address"] == "/ws/v1/conversation"
    for message in messages.values():
        ref = message["payload"]["properties"]["payload"]["$ref"].rsplit("/", 1)[1]
        assert ref in doc["components"]["schemas"]
    sent = {r["$ref"].rsplit("/", 1)[1] for r in doc["operations"]["clientSends"]["messages"]}
    assert sent == {t.replace(".", "_") for t in CLIENT_PAYLOADS}


@pytest.mark.parametrize("type_", sorted(set(CLIENT_PAYLOADS) | set(SERVER_PAYLOADS)))
def test_each_example_is_a_valid_frame_of_its_type(type_):
    model = CLIENT_PAYLOADS.get(type_) or SERVER_PAYLOADS[type_]
    model.model_validate(EXAMPLES[type_])
    example = asyncapi_document()["components"]["messages"][type_.replace(".", "_")]["examples"][0]["payload"]
    assert WsEnvelope.model_validate(example).type == type_


def test_every_close_code_a_bound_uses_is_documented():
    description = asyncapi_document()["info"]["description"]
    assert CLOSE_CODES and all(f"{number} `{code}`" in description for code, number in CLOSE_CODES.items())
    assert "1008 `origin_not_allowed`" in description
