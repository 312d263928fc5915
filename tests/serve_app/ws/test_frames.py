"""Reading a WebSocket frame: every bad frame is a typed FrameError naming its field; a good one its typed payload."""

from __future__ import annotations

import json

import pytest

from protocol.ws import CLIENT_PAYLOADS, DialogueInputPayload, WriteDecidePayload
from serve_app.ws.reading import FrameError, read_frame

MAX = 1024
DEPTH = 8


def frame(obj) -> dict:
    return {"type": "websocket.receive", "text": json.dumps(obj, ensure_ascii=False)}


def refused(message: dict) -> FrameError:
    with pytest.raises(FrameError) as caught:
        read_frame(message, MAX, max_depth=DEPTH)
    return caught.value


def test_a_good_input_frame_reads_as_its_payload_model():
    envelope, payload = read_frame(
        frame(
            {
                "type": "dialogue.input",
                "timestamp": "2026-12-01T10:00:00+08:00",
                "payload": {"client_message_id": "c1", "modality": "text", "raw_content": "明天下午三点开会"},
            }
        ),
        MAX,
        max_depth=DEPTH,
    )
    assert envelope.type == "dialogue.input" and isinstance(payload, DialogueInputPayload)
    assert payload.raw_content == "明天下午三点开会"


def test_the_timestamp_defaults_to_arrival_when_left_out():
    envelope, payload = read_frame(frame({"type": "transport.ping", "payload": {}}), MAX, max_depth=DEPTH)
    assert envelope.timestamp.tzinfo is not None and payload.nonce is None


@pytest.mark.parametrize(
    "message, code, field",
    [
        ({"type": "websocket.receive", "bytes": b"\x00\x01"}, "binary_frame", None),
        ({"type": "websocket.receive", "text": "{not json"}, "invalid_json", None),
        (frame({"type": "dialogue.shout", "payload": {}}), "unknown_type", "type"),
        (frame({"payload": {}}), "missing_field", "type"),
        (frame({"type": "dialogue.input", "timestamp": "yesterday", "payload": {}}), "invalid_field", "timestamp"),
        (
            frame({"type": "dialogue.input", "payload": {"modality": "text", "raw_content": "你好"}}),
            "missing_field",
            "payload.client_message_id",
        ),
        (
            frame({"type": "dialogue.input", "payload": {"client_message_id": "c", "raw_content": "   "}}),
            "invalid_field",
            "payload",
        ),
        (
            frame({"type": "dialogue.input", "payload": {"client_message_id": "c", "text": "你好"}}),
            "invalid_field",
            "payload.text",
        ),
        (
            frame(
                {
                    "type": "write.decide",
                    "payload": {"write_request_id": "nope", "decision": "confirmed", "idempotency_key": "k"},
                }
            ),
            "invalid_field",
            "payload.write_request_id",
        ),
        (
            frame(
                {
                    "type": "write.decide",
                    "payload": {
                        "write_request_id": "6f1c2a4e-8d3b-4e59-9a7c-0b5d1e2f3a4c",
                        "decision": "maybe",
                        "idempotency_key": "k",
                    },
                }
            ),
            "invalid_field",
            "payload.decision",
        ),
        (
            frame(
                {
                    "type": "selection.submit",
                    "payload": {"interaction_id": "6f1c2a4e-8d3b-4e59-9a7c-0b5d1e2f3a4c", "selected_candidate_ids": []},
                }
            ),
            "invalid_field",
            "payload.selected_candidate_ids",
        ),
    ],
)
def test_bad_frames_are_typed(message, code, field):
    error = refused(message)
    assert (error.code, error.field) == (code, field)
    assert error.message


def test_a_frame_over_the_limit_is_too_large():
    big = frame({"type": "dialogue.input", "payload": {"client_message_id": "c", "raw_content": "长" * MAX}})
    assert refused(big).code == "frame_too_large"


def test_every_client_type_has_a_payload_model():
    assert set(CLIENT_PAYLOADS) == {
        "dialogue.input",
        "dialogue.answer",
        "selection.submit",
        "selection.cancel",
        "write.decide",
        "transport.ping",
        "transport.resume",
    }
    assert CLIENT_PAYLOADS["write.decide"] is WriteDecidePayload


def test_errors_map_to_the_wire_in_one_place():
    from engine.errors import InvalidInput, Overloaded
    from serve_app.errors import error_event

    shed = error_event("dialogue.error", Overloaded("at capacity"), retry_after_s=2, client_message_id="c1")
    assert shed.type == "dialogue.error"
    assert shed.payload == {
        "code": "overloaded",
        "message": "at capacity",
        "field": None,
        "retry_after_s": 2,
        "client_message_id": "c1",
    }
    bad = error_event(
        "execution.error", InvalidInput("Choose one.", field="payload.selected_candidate_ids"), retry_after_s=2
    )
    assert (bad.payload["code"], bad.payload["field"], bad.payload["retry_after_s"]) == (
        "invalid_input",
        "payload.selected_candidate_ids",
        None,
    )
    crash = error_event("dialogue.error", KeyError("secret detail"), retry_after_s=2)
    assert crash.payload["code"] == "internal_error" and "secret" not in crash.payload["message"]


def test_a_frame_nesting_deeper_than_the_limit_is_refused_before_it_is_parsed():
    deep = {"type": "websocket.receive", "text": "[" * MAX}
    assert refused(deep).code == "json_too_deep"


def test_a_text_far_over_the_limit_is_too_large_before_it_is_encoded():
    assert refused({"type": "websocket.receive", "text": "x" * (MAX + 1)}).code == "frame_too_large"
