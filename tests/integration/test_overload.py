"""A burst far above capacity: only 200/503 (with Retry-After), nothing hangs past its deadline, and the app
recovers."""

from __future__ import annotations

import asyncio
import time

import httpx

BURST = 160
# Client-side slack over the 600 ms turn budget: 160 connections opening at once on 2 cores put the slowest
# answer at 1.7–2.4 s here (shed answers included); a hung request would sit at the 30 s client timeout.
HANG_MARGIN_S = 3.0
RECOVERY_S = 10.0


async def _one(client: httpx.AsyncClient, i: int) -> tuple[int, float, dict, dict]:
    t0 = time.perf_counter()
    resp = await client.post("/api/v1/agent/chat", json={"user_id": f"burst-{i}", "text": "把车窗打开"})
    return resp.status_code, time.perf_counter() - t0, dict(resp.headers), resp.json()


async def _burst(url: str) -> list[tuple[int, float, dict, dict]]:
    limits = httpx.Limits(max_connections=BURST, max_keepalive_connections=BURST)
    async with httpx.AsyncClient(base_url=url, timeout=30.0, limits=limits) as client:
        return await asyncio.gather(*(_one(client, i) for i in range(BURST)))


def test_burst_sheds_cleanly_and_recovers(serve_app, cockpit):
    _, settings = cockpit
    results = asyncio.run(_burst(serve_app["url"]))
    codes = [code for code, *_ in results]
    assert set(codes) <= {200, 503}, sorted(set(codes))
    shed = [r for r in results if r[0] == 503]
    for _, _, headers, body in shed:
        assert headers.get("retry-after") == str(settings.serving.retry_after_s)
        assert body["error"]["code"] == "overloaded"
    answered = [r for r in results if r[0] == 200]
    assert answered, "shedding everything is not a pass"
    budget_s = settings.budgets.turn_ms["text"] / 1000
    slowest = max(wall for _, wall, _, _ in results)
    print(f"burst of {BURST}: {len(answered)} answered, {len(shed)} shed, slowest {slowest * 1000:.0f} ms")
    assert slowest <= budget_s + HANG_MARGIN_S

    # model replicas may still be draining work the burst queued; the service must be back within seconds
    with httpx.Client(base_url=serve_app["url"], timeout=10.0) as client:
        recovered_by = time.perf_counter() + RECOVERY_S
        while True:
            after = client.post("/api/v1/agent/chat", json={"user_id": "after-burst", "text": "把车窗打开"})
            if (
                after.status_code == 200
                and not after.json()["timings"]["degraded"]
                or time.perf_counter() > recovered_by
            ):
                break
            time.sleep(0.5)
    assert after.status_code == 200 and after.json()["status"] == "completed", after.text
