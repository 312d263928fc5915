"""`python -m benchmarks.planner`: the LLM planner's endpoint and its plans, on the served app (cockpit pack).

Starts Baton (the Planner deployment: vLLM on the CPU, gemma-3-270m) on a throwaway embedded PostgreSQL, then
1. streams `/v1/chat/completions` at 1, 2 and 4 concurrent clients with the planner's own prompt and schema (vLLM
   `bench serve`'s vocabulary: TTFT, TPOT, ITL, end to end, tokens/s, goodput inside stages_ms.planner_llm);
2. plans benchmarks/data/plans_cockpit.yaml as chat turns, then without a deadline: the share of LLM plans that are
   schema-valid, catalog-valid, grounded and correct, next to the local planners'.
Writes JSON, markdown and a figure under benchmarks/results/planner/.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks.outputs import provenance, write
from benchmarks.planner_plans import planner_for, planning_request, plans
from benchmarks.planner_report import figure, markdown
from benchmarks.stats import distribution

ROOT = Path(__file__).resolve().parent.parent
PROMPT_TEXT = "把车窗打开，然后空调开到二十二度"  # the endpoint phase's request: a real planning prompt


async def one_stream(client: httpx.AsyncClient, body: dict) -> dict:
    started = time.perf_counter()
    arrivals, usage, finish = [], None, None
    async with client.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            choice = chunk["choices"][0]
            if choice["delta"].get("content"):
                arrivals.append(time.perf_counter())
            usage = chunk.get("usage") or usage
            finish = choice.get("finish_reason") or finish
    e2e = (time.perf_counter() - started) * 1000
    ttft = (arrivals[0] - started) * 1000 if arrivals else None
    tokens = (usage or {}).get("completion_tokens", len(arrivals))
    return {
        "ttft_ms": ttft,
        "e2e_ms": e2e,
        "tokens": tokens,
        "finish_reason": finish,
        "itl_ms": [(b - a) * 1000 for a, b in zip(arrivals, arrivals[1:], strict=False)],
        "tpot_ms": (e2e - ttft) / (tokens - 1) if ttft is not None and tokens > 1 else None,
    }


async def endpoint(url: str, body: dict, concurrency: int, requests: int, slo_ms: float) -> dict:
    async with httpx.AsyncClient(base_url=url, timeout=120.0) as client:
        queue = list(range(requests))
        results: list[dict] = []

        async def worker() -> None:
            while queue:
                queue.pop()
                results.append(await one_stream(client, body))

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - started
    return {
        "concurrency": concurrency,
        "requests": len(results),
        "wall_s": round(wall, 2),
        "ttft_ms": distribution([r["ttft_ms"] for r in results if r["ttft_ms"] is not None]),
        "tpot_ms": distribution([r["tpot_ms"] for r in results if r["tpot_ms"] is not None]),
        "itl_ms": distribution([x for r in results for x in r["itl_ms"]]),
        "e2e_ms": distribution([r["e2e_ms"] for r in results]),
        "output_tokens_per_s": round(sum(r["tokens"] for r in results) / wall, 2),
        "requests_per_s": round(len(results) / wall, 3),
        "goodput_per_s": round(sum(r["e2e_ms"] <= slo_ms for r in results) / wall, 3),
        "finish_reasons": {
            f: sum(r["finish_reason"] == f for r in results) for f in {r["finish_reason"] for r in results}
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.planner", description=__doc__.splitlines()[0])
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--requests", type=int, default=12, help="requests per concurrency level")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "planner")
    args = parser.parse_args(argv)

    from config.settings import load_settings
    from serve_app.ops import launcher
    from store.embedded import EmbeddedPostgres

    [port] = launcher.free_ports(1)
    env = {**os.environ, "BATON_PACK": "cockpit"}
    settings = load_settings(ROOT / "config", env)
    database = None
    if not env.get("DATABASE_URL"):
        database = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="baton-bench-pg-")) / "pgdata")
        env["DATABASE_URL"] = database.start()
    config = launcher.load_serve_config(ROOT / "config" / "serve_local.yaml", env, port=port)
    url, slo_ms = f"http://127.0.0.1:{port}", settings.budgets.stages_ms["planner_llm"]
    launcher.start(config, env)
    try:
        launcher.wait_until_healthy(port, timeout_s=600)
        planner, capture, _, _ = planner_for("cockpit")
        body = {"model": settings.llm.served_model_name, **asyncio.run(planning_request(planner, capture, PROMPT_TEXT))}
        levels = [asyncio.run(endpoint(url, body, n, args.requests, slo_ms)) for n in args.levels]
        quality = asyncio.run(plans(url, "cockpit"))
    finally:
        launcher.stop(port)
        if database is not None:
            database.stop()
            shutil.rmtree(database.pgdata.parent, ignore_errors=True)
    result = {
        "benchmark": "LLM planner: the endpoint (TTFT, TPOT, ITL, goodput) and its plans against the local planners",
        "model": "google/gemma-3-270m (base model, packaged GGUF converted to bf16)",
        "endpoint": levels,
        "plans": quality,
        "slo_ms": slo_ms,
        "llm_turn_ms": settings.budgets.turn_ms.get("llm", 0.0),
        "llm_settings": settings.llm.model_dump(),
        **provenance(),
        "settings": {"levels": args.levels, "requests": args.requests, "prompt_text": PROMPT_TEXT},
    }
    print(write(args.out, "planner", result, markdown, figure))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
