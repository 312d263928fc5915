"""The WebSocket protocol as an AsyncAPI 3.0 document (GET /asyncapi.json, next to /docs): every frame type with
its payload schema — generated from the models in protocol/ws.py, so it cannot drift from the wire — and an example
(each example is validated against its model by the tests)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from protocol.ws import CLIENT_PAYLOADS, SERVER_PAYLOADS
from serve_app.ws.bounds import CLOSE_CODES

_ID = "5b1e0c4a-7d2f-4e8b-9a61-3c2d1e0f9a8b"
_TURN = {
    "status": "waiting_write_confirmation",
    "reply": "新建日程：明天 15:00–16:00 牙医复诊",
    "timings": {
        "stages": {"encoder": 14.2, "commit": 3.1},
        "spans_ms": {},
        "total_ms": 41.7,
        "budget_ms": 600.0,
        "degraded": [],
    },
    "routing_debug": None,
    "workflow": None,
}
_TIME_RANGE = {
    "start_at": "2026-12-02T15:00:00+08:00",
    "end_at": "2026-12-02T16:00:00+08:00",
    "source": "user_explicit",
}

EXAMPLES: dict[str, dict[str, Any]] = {
    "dialogue.input": {
        "client_message_id": "c-0001",
        "modality": "text",
        "raw_content": "明天下午三点提醒我去牙医复诊",
    },
    "dialogue.answer": {"client_message_id": "c-0002", "reply_to_question_id": _ID, "raw_content": "明天上午十点"},
    "selection.submit": {"interaction_id": _ID, "selected_candidate_ids": [_ID]},
    "selection.cancel": {"interaction_id": _ID},
    "write.decide": {"write_request_id": _ID, "decision": "confirmed", "idempotency_key": "d-0001"},
    "transport.ping": {"nonce": "n-1"},
    "transport.resume": {"last_seen_message_id": _ID},
    "dialogue.clarification": {
        "question_id": _ID,
        "question_type": "normal",
        "reason": "missing_required_params",
        "mode": "single",
        "questions": [
            {"question_id": _ID, "field_name": "when", "question_text": "打算安排在什么时候？", "options": []}
        ],
        "expires_at": "2026-12-01T10:10:00Z",
        "original_agent_name": None,
        "original_function_name": "schedule_create",
        "turn": {**_TURN, "status": "waiting_slot", "reply": "打算安排在什么时候？"},
    },
    "dialogue.decision": {
        "source_message_id": _ID,
        "target_agent_name": "schedule_todo_agent",
        "target_function_name": "create",
        "parsed_params": {
            "when": {
                "start": "2026-12-02T15:00:00+08:00",
                "end": "2026-12-02T16:00:00+08:00",
                "text": "明天下午三点",
                "all_day": False,
            }
        },
        "time_range": _TIME_RANGE,
        "reply": "收到，已理解为「新建日程」。",
    },
    "execution.processing": {
        "source_message_id": _ID,
        "target_agent_name": "schedule_todo_agent",
        "target_function_name": "create",
        "stage": "calling_agent",
    },
    "execution.delta": {"source_message_id": _ID, "text": "听起来你最近压力不小，"},
    "selection.required": {
        "interaction_id": _ID,
        "question_text": "找到 2 项符合的安排，你指的是哪一项？",
        "candidates": [
            {
                "id": _ID,
                "title": "开组会",
                "start_at": "2026-12-02T09:00:00+08:00",
                "end_at": "2026-12-02T10:00:00+08:00",
                "item_type": "schedule",
            }
        ],
        "turn": {**_TURN, "status": "waiting_selection", "reply": "找到 2 项符合的安排，你指的是哪一项？"},
    },
    "write.confirmation_required": {
        "write_request_id": _ID,
        "payload_hash": "a" * 64,
        "preview_text": "新建日程：明天 15:00–16:00 牙医复诊",
        "confirmation_payload": {
            "write_request_id": _ID,
            "action": "create",
            "target_type": "task_item",
            "target_id": None,
            "payload": {
                "item_type": "schedule",
                "title": "牙医复诊",
                "start_at": "2026-12-02T15:00:00+08:00",
                "end_at": "2026-12-02T16:00:00+08:00",
                "status": "planned",
            },
            "payload_hash": "a" * 64,
            "preview_text": "新建日程：明天 15:00–16:00 牙医复诊",
            "base_version": None,
            "expires_at": "2026-12-01T10:15:00+00:00",
        },
        "expires_at": "2026-12-01T10:15:00+00:00",
        "turn": _TURN,
    },
    "write.applied": {
        "write_request_id": _ID,
        "status": "applied",
        "applied_target_id": _ID,
        "message": "The change was applied.",
        "turn": {**_TURN, "status": "applied", "reply": "已保存。"},
    },
    "execution.result": {
        "reply": "明天有 1 项安排：15:00 牙医复诊。",
        "result": {"items": []},
        "source_message_id": _ID,
        "write_request_id": None,
        "turn": {**_TURN, "status": "completed", "reply": "明天有 1 项安排：15:00 牙医复诊。"},
    },
    "dialogue.error": {
        "code": "overloaded",
        "message": "The service is at capacity; retry shortly.",
        "field": None,
        "retry_after_s": 1,
        "client_message_id": "c-0003",
    },
    "execution.error": {
        "code": "not_found",
        "message": "No such write request.",
        "field": "write_request_id",
        "retry_after_s": None,
        "client_message_id": None,
    },
    "transport.pong": {"nonce": "n-1", "server_time": "2026-12-01T10:00:00Z"},
    "transport.snapshot": {"messages": [], "pending_clarification": None, "last_event": None, "found_last_seen": True},
}


def _message(type_: str, model: type[BaseModel], direction: str) -> tuple[dict[str, Any], dict[str, Any]]:
    schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
    defs = schema.pop("$defs", {})
    name = type_.replace(".", "_")
    message = {
        "name": type_,
        "title": type_,
        "summary": (model.__doc__ or "").strip().splitlines()[0] if model.__doc__ else type_,
        "payload": {
            "type": "object",
            "required": ["type", "payload"],
            "properties": {
                "type": {"const": type_},
                "timestamp": {"type": "string", "format": "date-time"},
                "payload": {"$ref": f"#/components/schemas/{model.__name__}"},
            },
        },
        "examples": [
            {"payload": {"type": type_, "timestamp": "2026-12-01T10:00:00+08:00", "payload": EXAMPLES[type_]}}
        ],
        "x-direction": direction,
    }
    return {name: message}, {model.__name__: schema, **defs}


def asyncapi_document() -> dict[str, Any]:
    messages: dict[str, Any] = {}
    schemas: dict[str, Any] = {}
    for direction, table in (("client_to_server", CLIENT_PAYLOADS), ("server_to_client", SERVER_PAYLOADS)):
        for type_, model in table.items():
            msg, defs = _message(type_, model, direction)
            messages.update(msg)
            schemas.update(defs)
    send = [f"#/channels/conversation/messages/{t.replace('.', '_')}" for t in CLIENT_PAYLOADS]
    receive = [f"#/channels/conversation/messages/{t.replace('.', '_')}" for t in SERVER_PAYLOADS]
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": "Baton conversation WebSocket",
            "version": "1",
            "description": "One envelope {type, timestamp, payload} per frame (seed 002). Authenticate with "
            "`Authorization: Bearer <token>` or `?access_token=`; in the local token-less mode "
            "`?user_id=`. A bad frame is answered with dialogue.error / execution.error "
            "(code, message, field) and the connection stays open; a connection that cannot be "
            "authenticated is closed with 1008 `unauthorized`, a handshake from another site's page with 1008 "
            "`origin_not_allowed`. The bounds close with their code as the reason: "
            + ", ".join(f"{number} `{code}`" for code, number in CLOSE_CODES.items())
            + " (docs/websocket.md).",
        },
        "channels": {
            "conversation": {
                "address": "/ws/v1/conversation",
                "messages": {name: {"$ref": f"#/components/messages/{name}"} for name in messages},
            }
        },
        "operations": {
            "clientSends": {
                "action": "receive",
                "channel": {"$ref": "#/channels/conversation"},
                "messages": [{"$ref": ref} for ref in send],
            },
            "serverSends": {
                "action": "send",
                "channel": {"$ref": "#/channels/conversation"},
                "messages": [{"$ref": ref} for ref in receive],
            },
        },
        "components": {"messages": messages, "schemas": schemas},
    }
