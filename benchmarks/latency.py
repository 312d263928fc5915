"""`python -m benchmarks.latency`: sequential turn latency, Serve app vs the same engine with in-process models.

Both systems answer the same utterances (the pack's test split, a local-path mix) one at a time, in
alternating blocks (A B A B …) so drift on a shared machine hits both alike. Writes JSON + markdown under
benchmarks/results/.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
CHAT = "/api/v1/agent/chat"


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    k = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[k]


def _summary(walls: list[float], totals: list[float], degraded: int) -> dict:
    return {
        "turns": len(walls),
        "client_wall_ms": {"p50": round(statistics.median(walls), 2), "p95": round(_percentile(walls, 95), 2),
                           "max": round(max(walls), 2)},
        "server_total_ms": {"p50": round(statistics.median(totals), 2), "p95": round(_percentile(totals, 95), 2)},
        "degraded_turns": degraded,
    }


async def _drive(client: httpx.AsyncClient, texts: list[str], sink: dict) -> None:
    for text in texts:
        t0 = time.perf_counter()
        resp = await client.post(CHAT, json={"user_id": "bench", "text": text})
        wall = (time.perf_counter() - t0) * 1000
        body = resp.json()
        if resp.status_code != 200:
            raise RuntimeError(f"{resp.status_code}: {body}")
        sink["walls"].append(wall)
        sink["totals"].append(body["timings"]["total_ms"])
        sink["degraded"] += bool(body["timings"]["degraded"])


def _in_process_api(settings):
    from deployments.in_process import InProcessModels
    from engine.pack import find_pack, load_pack
    from engine.plugins import PluginRegistry
    from engine.session import InMemorySessionStore
    from engine.turn import TurnEngine
    from serve_app.admission import Admission
    from serve_app.http_api import Serving, create_api

    api = create_api()
    pack = load_pack(find_pack(settings.pack, shipped_dir=settings.packs_dir, state_dir=settings.state_dir))
    engine = TurnEngine(pack=pack, settings=settings, models=InProcessModels(settings),
                        sessions=InMemorySessionStore(settings.session.ttl_s), plugins=PluginRegistry())
    api.state.serving = Serving(engine=engine, admission=Admission(settings.serving.max_in_flight_turns))
    return api, pack


async def run(pack_name: str, rounds: int, block: int, out: Path) -> dict:
    from engine.settings import load_settings
    from serve_app import launcher

    settings = load_settings(ROOT / "config", {**os.environ, "BATON_PACK": pack_name})
    api, pack = _in_process_api(settings)
    texts = [t for t, _ in pack.test_rows()]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = launcher.load_serve_config(ROOT / "config" / "serve_local.yaml", {**os.environ, "BATON_PACK": pack_name}, port=port)
    database = launcher.ensure_database(config)
    launcher.start(config)
    try:
        launcher.wait_until_healthy(port, timeout_s=300)
        samples = {name: {"walls": [], "totals": [], "degraded": 0} for name in ("serve", "in_process")}
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=30) as serve_client, \
                httpx.AsyncClient(transport=httpx.ASGITransport(app=api), base_url="http://in-process", timeout=30) as local_client:
            await _drive(serve_client, texts[:10], {"walls": [], "totals": [], "degraded": 0})  # warm both
            await _drive(local_client, texts[:10], {"walls": [], "totals": [], "degraded": 0})
            for r in range(rounds):
                chunk = [texts[(r * block + i) % len(texts)] for i in range(block)]
                await _drive(serve_client, chunk, samples["serve"])
                await _drive(local_client, chunk, samples["in_process"])
    finally:
        launcher.stop()
        if database is not None:
            database.stop()

    result = {
        "benchmark": "sequential local-path turn latency",
        "pack": pack_name,
        "systems": {k: _summary(v["walls"], v["totals"], v["degraded"]) for k, v in samples.items()},
        "config": {"rounds": rounds, "block": block, "serve_config": "config/serve_local.yaml",
                   "budget_ms": settings.budgets.turn_ms["text"]},
        "machine": {"cores": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "git_commit": subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    s, i = result["systems"]["serve"], result["systems"]["in_process"]
    result["ratio_serve_over_in_process_p50"] = round(s["client_wall_ms"]["p50"] / i["client_wall_ms"]["p50"], 2)
    out.mkdir(parents=True, exist_ok=True)
    (out / "sequential_latency.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    rows = [f"| {name} | {v['turns']} | {v['client_wall_ms']['p50']} | {v['client_wall_ms']['p95']} | "
            f"{v['server_total_ms']['p50']} | {v['server_total_ms']['p95']} | {v['degraded_turns']} |"
            for name, v in result["systems"].items()]
    (out / "sequential_latency.md").write_text("\n".join([
        f"# Sequential turn latency ({pack_name} pack, {os.cpu_count()} cores, commit {result['git_commit'][:8]})", "",
        "| system | turns | client p50 ms | client p95 ms | server p50 ms | server p95 ms | degraded |",
        "|---|---|---|---|---|---|---|", *rows, "",
        f"Serve / in-process client p50 ratio: {result['ratio_serve_over_in_process_p50']}. "
        "In-process = the same engine and FastAPI app with the models in a thread pool, called without a socket.", ""]),
        encoding="utf-8")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.latency", description=__doc__.splitlines()[0])
    parser.add_argument("--pack", default="cockpit")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--block", type=int, default=20)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    result = asyncio.run(run(args.pack, args.rounds, args.block, args.out))
    print(json.dumps(result["systems"], indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
