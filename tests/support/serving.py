"""Driving the served app: the calendar instant its clock is pinned to, faults that take effect, the first turns."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import httpx

TZ = ZoneInfo("Asia/Shanghai")
# The served app's calendar clock in the integration tests (config `testing.now`): a Wednesday morning, so 明天 is in
# this week and 今天晚上 is still ahead, whatever the real day and hour.
PINNED_NOW = datetime(2026, 12, 2, 9, 0, tzinfo=TZ)


def until_fault_shows(
    send: Callable[[], dict[str, Any]], shows: Callable[[dict[str, Any]], bool], timeout_s: float = 30.0
) -> tuple[dict[str, Any], float]:
    """Send turns (`send()` -> the response body) until `shows(body)`: the faults file reaches the replicas within a
    fraction of a second. Returns the last body and its client wall time in ms."""
    deadline = time.time() + timeout_s
    while True:
        t0 = time.perf_counter()
        body = send()
        wall_ms = (time.perf_counter() - t0) * 1000
        if shows(body) or time.time() > deadline:
            return body, wall_ms
        time.sleep(0.3)


def first_turns(url: str) -> dict[str, dict[str, Any]]:
    """A text turn and an image turn (a photo of a command, uploaded first), as a user would send them."""
    from benchmarks.media_samples import available_fonts, render_text

    with httpx.Client(base_url=url, timeout=30.0) as client:
        text = client.post("/api/v1/agent/chat", json={"user_id": "first-user", "text": "帮我把车窗打开"})
        png = render_text("把空调调到二十二度", font=available_fonts()[0], size=36)
        media = client.post(
            "/api/v1/media/upload",
            data={"file_type": "image", "user_id": "first-user"},
            files={"file": ("command.png", png)},
        ).json()
        image = client.post(
            "/api/v1/agent/chat",
            json={"user_id": "first-user", "modality": "image_ocr", "source_url": media["source_url"]},
        )
    return {
        "text": {"status_code": text.status_code, **text.json()},
        "image": {"status_code": image.status_code, **image.json()},
    }
