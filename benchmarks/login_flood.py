"""`python -m benchmarks.login_flood`: the text path's latency while one address floods one account with bad logins.

Starts Baton (`config/serve_local.yaml`, its rate limits as shipped) on a throwaway embedded PostgreSQL unless
DATABASE_URL is set, registers the flooded account, then alternates blocks in one run: idle (sequential text turns,
nothing else) and flood (the same turns while `--flooders` clients send wrong passwords for that account from
127.0.0.1 in a closed loop). Records each turn's client latency, and each login's status and when it came back.
Writes results.json, results.md and plot.png under benchmarks/results/login_flood/.
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
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "login_flood"
TURN = "打开车窗"


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))], 2)


def _turns(client: httpx.Client, n: int, user: str) -> list[float]:
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        answer = client.post("/api/v1/agent/chat", json={"user_id": user, "text": TURN})
        if answer.status_code != 200:
            raise RuntimeError(f"a text turn failed: {answer.status_code} {answer.text}")
        samples.append((time.perf_counter() - t0) * 1000)
    return samples


def _flood(url: str, email: str, stop: threading.Event, logins: list[tuple[float, int]], started: float) -> None:
    with httpx.Client(base_url=url, timeout=30) as client:
        n = 0
        while not stop.is_set():
            n += 1
            status = client.post("/api/v1/auth/login", json={"email": email, "password": f"wrong {n}"}).status_code
            logins.append((time.perf_counter() - started, status))


def measure(url: str, *, blocks: int, turns: int, flooders: int, warmup: int) -> dict:
    email = f"flooded-{uuid.uuid4().hex[:8]}@example.com"
    user = f"flood-bench-{uuid.uuid4().hex[:6]}"
    logins: list[tuple[float, int]] = []
    started = time.perf_counter()
    runs: list[dict] = []
    with httpx.Client(base_url=url, timeout=30) as client:
        client.post("/api/v1/auth/register", json={"email": email, "password": "the real password"}).raise_for_status()
        _turns(client, warmup, user)
        for block in range(2 * blocks):
            flooding = block % 2 == 1
            stop, threads = threading.Event(), []
            if flooding:
                threads = [
                    threading.Thread(target=_flood, args=(url, email, stop, logins, started)) for _ in range(flooders)
                ]
                for thread in threads:
                    thread.start()
                time.sleep(1.0)  # the flood under way before the first timed turn
            t0 = time.perf_counter() - started
            samples = _turns(client, turns, user)
            stop.set()
            for thread in threads:
                thread.join()
            runs.append(
                {
                    "flood": flooding,
                    "from_s": round(t0, 2),
                    "to_s": round(time.perf_counter() - started, 2),
                    "turn_ms": [round(s, 2) for s in samples],
                }
            )
    idle = [s for r in runs if not r["flood"] for s in r["turn_ms"]]
    flood = [s for r in runs if r["flood"] for s in r["turn_ms"]]
    statuses = Counter(status for _, status in logins)
    first_429 = next((i for i, (_, status) in enumerate(logins) if status == 429), None)
    return {
        "idle_turn_ms": {"p50": _p(idle, 50), "p95": _p(idle, 95), "n": len(idle)},
        "flood_turn_ms": {"p50": _p(flood, 50), "p95": _p(flood, 95), "n": len(flood)},
        "p50_ratio": round(statistics.median(flood) / statistics.median(idle), 3),
        "blocks": [
            {"flood": r["flood"], "from_s": r["from_s"], "to_s": r["to_s"], "p50": _p(r["turn_ms"], 50)} for r in runs
        ],
        "logins": {
            "sent": len(logins),
            "by_status": {str(k): v for k, v in sorted(statuses.items())},
            "per_s": round(len(logins) / max(1e-9, sum(r["to_s"] - r["from_s"] + 1.0 for r in runs if r["flood"])), 1),
            "first_429_after": first_429,
        },
        "raw": {"blocks": runs, "logins": [(round(t, 3), s) for t, s in logins]},
    }


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    blocks = result["raw"]["blocks"]
    left.boxplot([b["turn_ms"] for b in blocks], showfliers=False)
    left.set_xticks(range(1, len(blocks) + 1), ["flood" if b["flood"] else "idle" for b in blocks])
    left.set_ylabel("text turn, client ms")
    left.set_title(f"text path p50: idle {result['idle_turn_ms']['p50']} ms, flood {result['flood_turn_ms']['p50']} ms")
    logins = result["raw"]["logins"]
    for status, colour in (("401", "tab:orange"), ("429", "tab:blue")):
        times = [t for t, s in logins if str(s) == status]
        right.hist(times, bins=60, alpha=0.7, label=f"{status} ({len(times)})", color=colour)
    right.set_xlabel("s since start")
    right.set_ylabel("logins answered")
    right.set_title("bad logins for one account from one address")
    right.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(result: dict) -> str:
    idle, flood, logins = result["idle_turn_ms"], result["flood_turn_ms"], result["logins"]
    rows = [f"| {i + 1} | {'flood' if b['flood'] else 'idle'} | {b['p50']} |" for i, b in enumerate(result["blocks"])]
    return "\n".join(
        [
            f"# Login flood (commit {result['git_commit'][:8]}, {result['machine']['cores']} cores, load "
            f"{result['machine']['loadavg_1m']})",
            "",
            f"{result['flooders']} clients send wrong passwords for one account from 127.0.0.1 in a closed loop while "
            "one client sends sequential text turns; idle and flood blocks alternate in one run.",
            "",
            "| | text turn p50 ms | p95 ms | turns |",
            "|---|---|---|---|",
            f"| idle | {idle['p50']} | {idle['p95']} | {idle['n']} |",
            f"| during the flood | {flood['p50']} | {flood['p95']} | {flood['n']} |",
            "",
            f"p50 during the flood ÷ idle: **{result['p50_ratio']}** (target ≤ 1.5).",
            "",
            f"Logins: {logins['sent']} sent (≈ {logins['per_s']}/s), by status {logins['by_status']}; the first 429 "
            f"was login #{logins['first_429_after']}.",
            "",
            "| block | kind | p50 ms |",
            "|---|---|---|",
            *rows,
            "",
            "![login flood](plot.png)",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.login_flood", description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=3, help="idle/flood pairs")
    parser.add_argument("--turns", type=int, default=40, help="text turns per block")
    parser.add_argument("--flooders", type=int, default=8)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    from serve_app.ops import launcher
    from store.embedded import EmbeddedPostgres

    [port] = launcher.free_ports(1)
    env = dict(os.environ)
    database = None
    if not env.get("DATABASE_URL"):
        database = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="baton-bench-pg-")) / "pgdata")
        env["DATABASE_URL"] = database.start()
    config = launcher.load_serve_config(ROOT / "config" / "serve_local.yaml", env, port=port)
    launcher.start(config, env)
    try:
        launcher.wait_until_healthy(port, timeout_s=600)
        result = measure(
            f"http://127.0.0.1:{port}", blocks=args.blocks, turns=args.turns, flooders=args.flooders, warmup=args.warmup
        )
    finally:
        launcher.stop(port)
        if database is not None:
            database.stop()
            shutil.rmtree(database.pgdata.parent, ignore_errors=True)
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    result.update(
        flooders=args.flooders,
        machine={"cores": os.cpu_count(), "platform": platform.platform(), "loadavg_1m": round(os.getloadavg()[0], 2)},
        git_commit=commit,
        measured_at=time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    )
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, indent=1), encoding="utf-8")
    plot(result, args.out / "plot.png")
    (args.out / "results.md").write_text(report(result), encoding="utf-8")
    print(json.dumps({k: v for k, v in result.items() if k != "raw"}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
