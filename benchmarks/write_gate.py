"""`python -m benchmarks.write_gate`: latency of a write-request create + confirm round trip over HTTP.

Starts Baton (on a throwaway embedded PostgreSQL unless DATABASE_URL is set) on a free loopback port, registers one
user and times N sequential round trips: POST /api/v1/write-requests, then POST …/decide with `confirmed`. Writes
JSON + markdown under benchmarks/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))]


def _stats(values: list[float]) -> dict:
    return {
        "p50": round(statistics.median(values), 2),
        "p95": round(_percentile(values, 95), 2),
        "max": round(max(values), 2),
    }


def measure(url: str, rounds: int, warmup: int) -> dict:
    samples: dict[str, list[float]] = {"create": [], "decide": [], "round_trip": []}
    with httpx.Client(base_url=url, timeout=30) as client:
        reg = client.post(
            "/api/v1/auth/register",
            json={"email": f"bench-{uuid.uuid4().hex[:8]}@example.com", "password": "benchmark-password"},
        )
        reg.raise_for_status()
        headers = {"Authorization": f"Bearer {reg.json()['access_token']}"}
        for i in range(warmup + rounds):
            body = {
                "action": "create",
                "target_type": "task_item",
                "preview_text": f"新建待办 {i}",
                "payload": {"item_type": "todo", "title": f"整理第 {i} 份周报", "due_at": "2026-12-04T18:00:00+08:00"},
            }
            t0 = time.perf_counter()
            created = client.post("/api/v1/write-requests", json=body, headers=headers)
            t1 = time.perf_counter()
            decided = client.post(
                f"/api/v1/write-requests/{created.json()['write_request_id']}/decide",
                json={
                    "decision": "confirmed",
                    "idempotency_key": f"k{i}",
                    "payload_hash": created.json()["payload_hash"],
                },
                headers=headers,
            )
            t2 = time.perf_counter()
            if created.status_code != 201 or decided.status_code != 200 or decided.json()["status"] != "applied":
                raise RuntimeError(f"round trip {i} failed: {created.status_code} {decided.status_code} {decided.text}")
            if i >= warmup:
                samples["create"].append((t1 - t0) * 1000)
                samples["decide"].append((t2 - t1) * 1000)
                samples["round_trip"].append((t2 - t0) * 1000)
    return {name: _stats(values) for name, values in samples.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.write_gate", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)

    from serve_app.ops import launcher
    from store.embedded import EmbeddedPostgres

    [port] = launcher.free_ports(1)
    env = dict(os.environ)
    database = None
    if not env.get("DATABASE_URL"):
        # a throwaway server: benchmark users and items stay out of the state dir's database
        database = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="baton-bench-pg-")) / "pgdata")
        env["DATABASE_URL"] = database.start()
    config = launcher.load_serve_config(ROOT / "config" / "serve_local.yaml", env, port=port)
    launcher.start(config, env)
    try:
        launcher.wait_until_healthy(port, timeout_s=300)
        latency = measure(f"http://127.0.0.1:{port}", args.rounds, args.warmup)
    finally:
        launcher.stop()
        if database is not None:
            database.stop()
            shutil.rmtree(database.pgdata.parent, ignore_errors=True)
    result = {
        "benchmark": "write-request create + confirm round trip over HTTP (sequential)",
        "latency_ms": latency,
        "rounds": args.rounds,
        "warmup": args.warmup,
        "database": "external DATABASE_URL" if database is None else "embedded PostgreSQL 18 (Unix socket), fresh",
        "machine": {
            "cores": os.cpu_count(),
            "platform": platform.platform(),
            "loadavg_1m": round(os.getloadavg()[0], 2),
        },
        "git_commit": subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "write_gate_round_trip.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    rows = [f"| {name} | {v['p50']} | {v['p95']} | {v['max']} |" for name, v in latency.items()]
    (args.out / "write_gate_round_trip.md").write_text(
        "\n".join(
            [
                f"# Write gate round trip ({args.rounds} sequential, {os.cpu_count()} cores, "
                f"commit {result['git_commit'][:8]})",
                "",
                "| step | p50 ms | p95 ms | max ms |",
                "|---|---|---|---|",
                *rows,
                "",
                f"Database: {result['database']}. Client wall time over loopback HTTP through the Serve proxy.",
                "",
            ]
        ),
        encoding="utf-8",
    )
    print(json.dumps(latency, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
