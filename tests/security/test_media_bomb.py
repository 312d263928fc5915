"""Audio bombs against the served app (issue 34, item 8): a 64 KB FLAC that declares no length and decodes to 1.15 GB
is refused typed (413 media_too_large) within 2 s, the Orchestrator replicas' peak memory barely moves, and the next
turn answers."""

from __future__ import annotations

import time
from pathlib import Path

import httpx
import pytest
from ray import serve

from serve_app.ops import launcher
from tests.support.audio_bomb import decoded_bytes, silent_flac
from tests.support.served import ORCHESTRATOR_REPLICAS

pytestmark = pytest.mark.ray

BOMB_S = 5 * 3600.0
MiB = 1024 * 1024


def orchestrator_pids() -> set[int]:
    handle = serve.get_deployment_handle("Orchestrator", app_name=launcher.APP_NAME)
    pids: set[int] = set()
    for _ in range(40):  # a handle reaches one replica per call
        pids.add(handle.stats.remote().result(timeout_s=10)["pid"])
        if len(pids) >= ORCHESTRATOR_REPLICAS:
            break
    return pids


def peak_rss(pid: int) -> int:
    """The process's peak resident memory so far (VmHWM), in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError(f"no VmHWM for {pid}")


def test_an_audio_bomb_upload_is_refused_typed_within_2_s_and_the_replicas_keep_their_memory(serve_app):
    bomb = silent_flac(BOMB_S)
    assert decoded_bytes(BOMB_S) >= 1024 * MiB
    pids = orchestrator_pids()
    before = {pid: peak_rss(pid) for pid in pids}
    with httpx.Client(base_url=serve_app["url"], timeout=60) as client:
        for _ in range(ORCHESTRATOR_REPLICAS):  # the proxy picks a replica per request: give each its chance
            t0 = time.perf_counter()
            resp = client.post(
                "/api/v1/media/upload",
                data={"file_type": "audio", "user_id": "bomber"},
                files={"file": ("silence.flac", bomb, "audio/flac")},
            )
            seconds = time.perf_counter() - t0
            assert resp.status_code == 413, resp.text
            assert resp.json()["error"]["code"] == "media_too_large" and resp.json()["error"]["field"] == "file"
            assert seconds <= 2.0
        turn = client.post("/api/v1/agent/chat", json={"user_id": "bomber", "text": "帮我把车窗打开"})
    growth = {pid: peak_rss(pid) - before[pid] for pid in pids}
    assert all(g < 200 * MiB for g in growth.values()), growth
    assert turn.status_code == 200, turn.text
