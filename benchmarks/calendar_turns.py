"""`python -m benchmarks.calendar_turns`: the text path's latency while the served app syncs a 1,000-event calendar.

Starts Radicale on 127.0.0.1 with one 1,000-event calendar per sync block (the events of `benchmarks.calendar_sync`:
two time zones, weekly series), and Baton (`config/serve_local.yaml`) on a throwaway embedded PostgreSQL unless
DATABASE_URL is set, with a calendar key and CalDAV allowed on loopback. Then alternates blocks in one run: idle
(sequential text turns, nothing else) and sync (one account links the next calendar over `POST
/api/v1/calendar/caldav`; its first sync runs in the background of the Orchestrator replica that took the request,
and the same turns are sent until `GET /api/v1/calendar/status` shows it synced). Records each turn's client
latency and each sync's duration. Writes results.json, results.md and plot.png under
benchmarks/results/calendar_turns/.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path

import httpx

from benchmarks.calendar_sync import PASSWORD, USER, percentile, place_events, start_radicale
from benchmarks.outputs import provenance, write

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "calendar_turns"
TURN = "打开车窗"
KEY_ENV = "BATON_CALENDAR_KEY"


def fill(folder: Path, base: str, name: str, events: int) -> str:
    """A new calendar `name` of Radicale's user holding `events` events; its URL."""
    from caldav.davclient import DAVClient

    with DAVClient(url=base + "/", username=USER, password=PASSWORD) as client:
        client.principal().make_calendar(name=name, cal_id=name)
    place_events(folder / "collections" / "collection-root" / USER / name, events)
    return f"{base}/{USER}/{name}/"


def _turn(client: httpx.Client, user: str) -> float:
    t0 = time.perf_counter()
    answer = client.post("/api/v1/agent/chat", json={"user_id": user, "text": TURN})
    if answer.status_code != 200:
        raise RuntimeError(f"a text turn failed: {answer.status_code} {answer.text}")
    return (time.perf_counter() - t0) * 1000


def _synced(client: httpx.Client, headers: dict[str, str], source_id: str) -> dict | None:
    for source in client.get("/api/v1/calendar/status", headers=headers).json()["sources"]:
        if source["id"] == source_id and (source["last_synced_at"] or source["last_error"]):
            return source
    return None


def measure(url: str, calendars: list[str], *, turns: int, warmup: int, timeout_s: float) -> dict:
    user = f"calendar-bench-{uuid.uuid4().hex[:6]}"
    runs: list[dict] = []
    started = time.perf_counter()
    with httpx.Client(base_url=url, timeout=60) as client:
        email = f"calendar-{uuid.uuid4().hex[:8]}@example.com"
        made = client.post("/api/v1/auth/register", json={"email": email, "password": "calendar bench password"})
        made.raise_for_status()
        headers = {"Authorization": f"Bearer {made.json()['access_token']}"}
        for _ in range(warmup):
            _turn(client, user)
        for n, calendar in enumerate(calendars):
            t0 = time.perf_counter() - started
            idle = [_turn(client, user) for _ in range(turns)]
            runs.append({"sync": False, "from_s": round(t0, 2), "to_s": round(time.perf_counter() - started, 2),
                         "turn_ms": [round(s, 2) for s in idle]})  # fmt: skip
            body = {"name": f"bench {n}", "url": calendar, "username": USER, "password": PASSWORD}
            linked = client.post("/api/v1/calendar/caldav", json=body, headers=headers)
            linked.raise_for_status()
            t0 = time.perf_counter() - started
            during, done = [], None
            while done is None:
                if time.perf_counter() - started - t0 > timeout_s:
                    raise RuntimeError(f"calendar {n} was not synced in {timeout_s} s")
                during.append(_turn(client, user))
                done = _synced(client, headers, linked.json()["id"])
            if done["last_error"]:
                raise RuntimeError(f"calendar {n} failed to sync: {done['last_error']}")
            runs.append({"sync": True, "from_s": round(t0, 2), "to_s": round(time.perf_counter() - started, 2),
                         "entries": done["entries"], "turn_ms": [round(s, 2) for s in during]})  # fmt: skip
    idle = [s for r in runs if not r["sync"] for s in r["turn_ms"]]
    sync = [s for r in runs if r["sync"] for s in r["turn_ms"]]
    return {
        "idle_turn_ms": {"p50": percentile(idle, 50), "p95": percentile(idle, 95), "n": len(idle)},
        "sync_turn_ms": {"p50": percentile(sync, 50), "p95": percentile(sync, 95), "n": len(sync)},
        "p50_ratio": round(statistics.median(sync) / statistics.median(idle), 3),
        "syncs": [{"seconds": round(r["to_s"] - r["from_s"], 1), "entries": r["entries"]} for r in runs if r["sync"]],
        "raw": {"blocks": runs},
    }


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4))
    blocks = result["raw"]["blocks"]
    ax.boxplot([b["turn_ms"] for b in blocks], showfliers=False)
    ax.set_xticks(range(1, len(blocks) + 1), ["sync" if b["sync"] else "idle" for b in blocks])
    ax.set_ylabel("text turn, client ms")
    ax.set_title(
        f"text path p50: idle {result['idle_turn_ms']['p50']} ms, during a sync {result['sync_turn_ms']['p50']} ms"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(result: dict) -> str:
    idle, sync = result["idle_turn_ms"], result["sync_turn_ms"]
    syncs = ", ".join(f"{s['seconds']} s ({s['entries']} entries)" for s in result["syncs"])
    return "\n".join(
        [
            f"# Turns during a calendar sync (commit {result['git_commit'][:8]}, {result['machine']['cores']} cores, "
            f"load {result['machine']['loadavg_1m']})",
            "",
            f"One client sends sequential text turns ({TURN}) to the served app; idle blocks alternate with blocks in "
            f"which an account links a {result['events']}-event CalDAV calendar (Radicale on this machine) and the "
            "app syncs it in the background.",
            "",
            "| | text turn p50 ms | p95 ms | turns |",
            "|---|---|---|---|",
            f"| idle | {idle['p50']} | {idle['p95']} | {idle['n']} |",
            f"| during a first sync | {sync['p50']} | {sync['p95']} | {sync['n']} |",
            "",
            f"p50 during a sync ÷ idle: **{result['p50_ratio']}**. Syncs: {syncs}.",
            "",
            "![turns during a sync](plot.png)",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.calendar_turns", description=__doc__.splitlines()[0])
    parser.add_argument("--blocks", type=int, default=3, help="idle/sync pairs (one calendar each)")
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=40, help="text turns per idle block")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    from cryptography.fernet import Fernet

    from serve_app.ops import launcher
    from store.embedded import EmbeddedPostgres

    folder = Path(tempfile.mkdtemp(prefix="baton-bench-radicale-"))
    radicale, base = start_radicale(folder)
    [port] = launcher.free_ports(1)
    env = {**os.environ, KEY_ENV: Fernet.generate_key().decode()}
    database = None
    if not env.get("DATABASE_URL"):
        database = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="baton-bench-pg-")) / "pgdata")
        env["DATABASE_URL"] = database.start()
    config = launcher.load_serve_config(ROOT / "config" / "serve_local.yaml", env, port=port)
    overrides = config["applications"][0]["args"].setdefault("overrides", {})
    overrides["calendar"] = {"caldav": {"allow_private": True, "timeout_s": 600}}  # Radicale is on loopback
    try:
        calendars = [fill(folder, base, f"bench{n}", args.events) for n in range(args.blocks)]
        launcher.start(config, env)
        try:
            launcher.wait_until_healthy(port, timeout_s=600)
            result = measure(f"http://127.0.0.1:{port}", calendars, turns=args.turns, warmup=args.warmup,
                             timeout_s=600)  # fmt: skip
        finally:
            launcher.stop(port)
    finally:
        radicale.terminate()
        radicale.wait(timeout=10)
        shutil.rmtree(folder, ignore_errors=True)
        if database is not None:
            database.stop()
            shutil.rmtree(database.pgdata.parent, ignore_errors=True)
    result.update(events=args.events, **provenance())
    write(args.out, "results", result, report, lambda r, out: plot(r, out / "plot.png"))
    print(json.dumps({k: v for k, v in result.items() if k != "raw"}, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
