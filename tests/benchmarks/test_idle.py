"""The idle phase: blocks alternate order, every system gets the same utterances, warm-up is kept apart, summaries."""

from __future__ import annotations

import socket

import pytest
from aiohttp import web

from benchmarks.driver import LOST, Sample
from benchmarks.idle import block_order, block_texts, idle_summary, run_idle
from benchmarks.scenario import Idle


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_blocks_alternate_and_every_round_has_its_own_texts():
    assert block_order(["a", "b", "c"], 3) == [["a", "b", "c"], ["c", "b", "a"], ["a", "b", "c"]]
    spec = Idle(rounds=3, turns_per_block=4)
    texts = ["t1", "t2", "t3", "t4", "t5"]
    blocks = block_texts(texts, spec, seed=1)
    assert [len(b) for b in blocks] == [4, 4, 4]
    flat = [t for b in blocks for t in b]
    assert sorted(flat[:5]) == sorted(texts) and flat[5:] == (flat[:5] * 2)[:7]  # a shuffle, cycled across rounds
    assert blocks == block_texts(texts, spec, seed=1) and blocks != block_texts(texts, spec, seed=2)
    with pytest.raises(ValueError, match="no utterances"):
        block_texts([], spec, seed=1)


def _sample(status: int, wall: float, *, warmup: bool = False, stages: dict | None = None, degraded=()) -> Sample:
    return Sample(
        kind="single_intent",
        turn=0,
        endpoint="chat",
        t_send=0.0,
        wall_ms=wall,
        status=status,
        warmup=warmup,
        server_total_ms=wall - 2 if status == 200 else None,
        stages=stages or {},
        degraded=list(degraded),
    )


def test_idle_summary_drops_warmup_and_reports_stage_p50():
    stages = {"encoder": 10.0, "keyword": 0.1}
    block_a = [_sample(200, 30, stages=stages), _sample(200, 50, stages={"encoder": 20.0}), _sample(503, 2)]
    block_b = [_sample(200, 70, stages=stages, degraded=["retriever"]), _sample(LOST, 30000)]
    s = idle_summary(
        [_sample(200, 900, warmup=True, stages={"encoder": 800.0}), *block_a, *block_b], [block_a, block_b]
    )
    assert s["turns"] == 5 and s["ok"] == 3 and s["status_counts"] == {"0": 1, "200": 3, "503": 1}
    assert s["client_wall_ms"]["p50"] == 50 and s["client_wall_ms"]["max"] == 70
    assert s["server_total_ms"]["p50"] == 48
    assert s["stages_p50_ms"] == {"encoder": 10.0, "keyword": 0.1}
    assert s["block_client_p50_ms"] == [30.0, 70.0] and s["degraded_turns"] == 1


@pytest.fixture
async def two_systems():
    seen: dict[str, list[dict]] = {"a": [], "b": []}
    runners = []
    urls = {}
    for name in ("a", "b"):

        async def turn(request: web.Request, name=name) -> web.Response:
            body = await request.json()
            seen[name].append(body)
            return web.json_response(
                {
                    "session_id": "s",
                    "status": "completed",
                    "timings": {
                        "stages": {"encoder": 5.0 if name == "a" else 1.0},
                        "total_ms": 7.0,
                        "budget_ms": 600,
                        "degraded": [],
                    },
                }
            )

        app = web.Application()
        app.router.add_post("/api/v1/agent/chat", turn)
        runner = web.AppRunner(app)
        await runner.setup()
        port = _port()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        runners.append(runner)
        urls[name] = f"http://127.0.0.1:{port}"
    yield urls, seen
    for runner in runners:
        await runner.cleanup()


async def test_run_idle_sends_the_same_texts_to_every_system_one_fresh_user_each(two_systems):
    urls, seen = two_systems
    spec = Idle(rounds=2, turns_per_block=3, warmup_turns=2, pause_ms=0, settle_s=0, thaw_s=0, block_warmup_turns=1)
    section, samples = await run_idle(urls, ["一", "二", "三", "四"], spec, seed=5, timeout_s=5, log=lambda _: None)
    assert section["order"] == [["a", "b"], ["b", "a"]]
    for name in ("a", "b"):
        bodies = seen[name]
        assert len(bodies) == 2 + 2 * (1 + 3)  # the warm-up, then each block's own warm-up turn and its turns
        assert len({b["user_id"] for b in bodies}) == len(bodies) and not any("session_id" in b for b in bodies)
        assert sum(s.warmup for s in samples[name]) == 2 + 2
        summary = section["systems"][name]
        assert summary["turns"] == 6 and summary["ok"] == 6 and len(summary["block_client_p50_ms"]) == 2
    assert [b["text"] for b in seen["a"]] == [b["text"] for b in seen["b"]]
    assert section["systems"]["a"]["stages_p50_ms"] == {"encoder": 5.0}
    assert section["systems"]["b"]["stages_p50_ms"] == {"encoder": 1.0}


async def test_each_system_is_focused_before_its_warm_up_and_each_of_its_blocks(two_systems):
    urls, _ = two_systems
    spec = Idle(rounds=2, turns_per_block=1, warmup_turns=1, pause_ms=0, settle_s=0, thaw_s=0)
    focused: list[tuple[str, bool]] = []
    await run_idle(
        urls,
        ["一", "二"],
        spec,
        seed=5,
        timeout_s=5,
        log=lambda _: None,
        focus=lambda name, freeze=False: focused.append((name, freeze)),
    )
    assert focused == [(name, True) for name in ["a", "b", "a", "b", "b", "a"]]  # the others stopped: freeze_others
    focused.clear()
    await run_idle(
        urls,
        ["一", "二"],
        spec.model_copy(update={"freeze_others": False}),
        seed=5,
        timeout_s=5,
        log=lambda _: None,
        focus=lambda name, freeze=False: focused.append((name, freeze)),
    )
    assert {freeze for _, freeze in focused} == {False}
