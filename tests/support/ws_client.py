"""A WebSocket client speaking seed 002's envelope, for the integration tests."""

from __future__ import annotations

import json
import time
import uuid
from datetime import datetime
from zoneinfo import ZoneInfo

from websockets.sync.client import connect

TZ = ZoneInfo("Asia/Shanghai")
ENDS_TURN = {
    "dialogue.clarification",
    "selection.required",
    "write.confirmation_required",
    "write.applied",
    "execution.result",
    "dialogue.error",
    "execution.error",
}


class Conversation:
    """One WebSocket connection speaking seed 002's envelope."""

    def __init__(self, url: str, token: str | None = None, *, query: str = "", headers: dict | None = None) -> None:
        ws_url = url.replace("http://", "ws://") + "/ws/v1/conversation" + query
        self._connection = connect(
            ws_url,
            additional_headers=headers if headers is not None else {"Authorization": f"Bearer {token}"},
            open_timeout=10,
            max_size=2**22,
        )
        self.ws = self._connection.__enter__()

    def send(self, type_: str, payload: dict) -> None:
        self.ws.send(
            json.dumps(
                {"type": type_, "timestamp": datetime.now(TZ).isoformat(), "payload": payload}, ensure_ascii=False
            )
        )

    def turn(self, type_: str, payload: dict, *, timeout: float = 20.0, tries: int = 3) -> list[dict]:
        """Send a frame and read its events up to the one that ends the turn. Like the demo page, an error that names
        `retry_after_s` (the server shed the turn, or its session was busy; nothing ran) is retried with the same
        frame after that wait, up to `tries` sends in all."""
        for attempt in range(tries):
            self.send(type_, payload)
            events = self.read_turn(timeout)
            wait = events[-1]["payload"].get("retry_after_s") if events[-1]["type"] == "dialogue.error" else None
            if wait is None or attempt == tries - 1:
                return events
            time.sleep(wait)
        raise AssertionError("unreachable")

    def read_turn(self, timeout: float = 20.0) -> list[dict]:
        events = []
        while True:
            event = json.loads(self.ws.recv(timeout=timeout))
            events.append(event)
            if event["type"] in ENDS_TURN:
                return events

    def say(self, text: str, cmid: str | None = None) -> list[dict]:
        return self.turn(
            "dialogue.input", {"client_message_id": cmid or uuid.uuid4().hex, "modality": "text", "raw_content": text}
        )

    def decide(self, confirmation: dict, decision: str = "confirmed", key: str | None = None) -> list[dict]:
        payload = confirmation["payload"]
        return self.turn(
            "write.decide",
            {
                "write_request_id": payload["write_request_id"],
                "decision": decision,
                "idempotency_key": key or uuid.uuid4().hex,
                "payload_hash": payload["payload_hash"],
            },
        )

    def close(self) -> None:
        self._connection.__exit__(None, None, None)


def types(events: list[dict]) -> list[str]:
    return [e["type"] for e in events]
