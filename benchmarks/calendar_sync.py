"""`python -m benchmarks.calendar_sync`: a two-way CalDAV sync of a 1,000-event calendar against a real Radicale.

Starts a throwaway embedded PostgreSQL (unless DATABASE_URL is set) and Radicale on 127.0.0.1, places 1,000 events
in one calendar (two time zones; 40 of them weekly series of 4) and syncs it into a new user: the first sync (a full
listing), an incremental one after 10 edits and 5 deletions on the server, then 200 items pushed up. Meanwhile, on the
same event loop and database pool as the sync (one replica's), a store read of a day's agenda repeats every 50 ms:
its latency idle and while each sync runs is what the sync costs the work beside it. Writes results.json,
results.md and plot.png under benchmarks/results/calendar_sync/.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

from benchmarks.outputs import provenance, write

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "calendar_sync"
USER, PASSWORD = "bench", "bench-app-password"
NOW = datetime(2026, 12, 7, 4, 0, tzinfo=UTC)
LAUNCH = (
    "import sys; from radicale import config, server; c = config.load([(sys.argv[1], False)]);"
    " c.update({'storage': {'_filesystem_fsync': 'False'}}, 'bench', privileged=True); server.serve(c)"
)


def event_ics(uid: str, start: datetime, zone: str, rrule: str = "") -> str:
    local = start.astimezone(ZoneInfo(zone))
    fmt = "%Y%m%dT%H%M%S"
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//bench//EN\r\nBEGIN:VEVENT\r\n"
        f"UID:{uid}\r\nDTSTAMP:20261201T000000Z\r\nDTSTART;TZID={zone}:{local.strftime(fmt)}\r\n"
        f"DTEND;TZID={zone}:{(local + timedelta(minutes=45)).strftime(fmt)}\r\n{rrule}"
        f"SUMMARY:事件 {uid}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )


def place_events(collection: Path, events: int) -> int:
    """`events` events written straight into a Radicale calendar folder (two time zones; weekly series of 4
    occurrences: 4 % of the objects give 16 % of the events); how many objects that took."""
    series = events // 100
    singles = events - 4 * series
    for n in range(singles):
        zone = "Asia/Shanghai" if n % 2 else "Europe/Berlin"
        (collection / f"e{n}.ics").write_text(event_ics(f"e{n}", NOW + timedelta(hours=3 * n), zone), encoding="utf-8")
    for n in range(series):
        text = event_ics(f"w{n}", NOW + timedelta(days=1, hours=n), "Asia/Shanghai", "RRULE:FREQ=WEEKLY;COUNT=4\r\n")
        (collection / f"w{n}.ics").write_text(text, encoding="utf-8")
    return singles + series


def start_radicale(folder: Path) -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    (folder / "users").write_text(f"{USER}:{PASSWORD}\n", encoding="utf-8")
    (folder / "config").write_text(
        f"[server]\nhosts = 127.0.0.1:{port}\n[auth]\ntype = htpasswd\nhtpasswd_filename = {folder / 'users'}\n"
        f"htpasswd_encryption = plain\ndelay = 0\n[storage]\nfilesystem_folder = {folder / 'collections'}\n"
        "[logging]\nlevel = warning\n",
        encoding="utf-8",
    )
    process = subprocess.Popen([sys.executable, "-c", LAUNCH, str(folder / "config")], stderr=subprocess.DEVNULL)
    for _ in range(300):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return process, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("radicale did not start")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))], 2) if ordered else 0.0


async def _probe(db, user_id, samples: list[tuple[float, float]], stop: asyncio.Event, started: float) -> None:
    from store.calendars import entries

    while not stop.is_set():
        t0 = time.perf_counter()
        async with db.connection() as conn:
            await entries.between(conn, user_id, start_at=NOW, end_at=NOW + timedelta(days=1))
        samples.append((t0 - started, (time.perf_counter() - t0) * 1000))
        await asyncio.sleep(0.05)


async def measure(dsn: str, folder: Path, events: int) -> dict:
    from caldav.davclient import DAVClient
    from cryptography.fernet import Fernet
    from pydantic import SecretStr

    from config.settings import load_settings
    from engine.calendars.secrets import PasswordBox
    from protocol.rest import WriteRequestCreate
    from store import users, write_gate
    from store.calendars import caldav_sync, sources
    from store.database import Database

    settings = load_settings(ROOT / "config", {})
    cfg = settings.calendar.model_copy(
        update={"caldav": settings.calendar.caldav.model_copy(update={"allow_private": True, "timeout_s": 600})}
    )
    box, tz = PasswordBox(SecretStr(Fernet.generate_key().decode())), ZoneInfo(settings.timezone)
    radicale, base = start_radicale(folder)
    db = await Database.open(dsn, settings.database)
    try:
        client = DAVClient(url=base + "/", username=USER, password=PASSWORD)
        client.principal().make_calendar(name="bench", cal_id="bench")
        url = f"{base}/{USER}/bench/"
        objects = place_events(folder / "collections" / "collection-root" / USER / "bench", events)
        async with db.connection() as conn:
            user = await users.register(
                conn, email=f"{uuid.uuid4().hex}@bench.test", password_hash="x", display_name=None
            )
            source = await sources.create(
                conn, user.id, kind="caldav", name="bench", url=url, username=USER, password_sealed=box.seal(PASSWORD)
            )
        samples: list[tuple[float, float]] = []
        phases: list[dict] = []
        stop, started = asyncio.Event(), time.perf_counter()
        probe = asyncio.create_task(_probe(db, user.id, samples, stop, started))

        async def phase(name: str, work) -> dict:
            await asyncio.sleep(2.0)  # an idle stretch before each phase
            t0 = time.perf_counter()
            report = await work()
            t1 = time.perf_counter()
            phases.append({"name": name, "from_s": round(t0 - started, 2), "to_s": round(t1 - started, 2)})
            return {"seconds": round(t1 - t0, 2), "report": report}

        async def sync():
            r = await caldav_sync.sync(db, box, cfg, tz, user.id, source.id, now=NOW)
            d = r.down
            return {"entries_changed": d.entries_changed, "entries_removed": d.entries_removed, "pushed": r.pushed}

        first = await phase("first sync", sync)
        for n in range(10):
            path = f"{url}e{n}.ics"
            client.put(path, event_ics(f"e{n}", NOW + timedelta(hours=3 * n + 1), "Asia/Shanghai"), {})
        for n in range(10, 15):
            client.delete(f"{url}e{n}.ics")
        incremental = await phase("incremental sync", sync)

        async def write_items() -> None:
            for n in range(200):
                start = NOW + timedelta(days=2, hours=n)
                body = WriteRequestCreate(
                    action="create", target_type="task_item", preview_text="x",
                    payload={"item_type": "schedule", "title": f"任务 {n}", "start_at": start.isoformat(),
                             "end_at": (start + timedelta(minutes=30)).isoformat()},
                )  # fmt: skip
                async with db.connection() as conn:
                    made = await write_gate.create(conn, user.id, body, idempotency_key=uuid.uuid4().hex, ttl_s=900,
                                                   now=datetime.now(UTC))  # fmt: skip
                    await write_gate.decide(conn, user.id, made.write_request_id, decision="confirmed",
                                            idempotency_key=uuid.uuid4().hex, payload_hash=None)  # fmt: skip

        await write_items()
        push = await phase("200 items pushed", sync)
        await asyncio.sleep(2.0)
        stop.set()
        await probe
    finally:
        await db.close()
        radicale.terminate()
        radicale.wait(timeout=10)
    during = [ms for t, ms in samples if any(p["from_s"] <= t < p["to_s"] for p in phases)]
    idle = [ms for t, ms in samples if not any(p["from_s"] - 0.1 <= t < p["to_s"] + 0.1 for p in phases)]
    return {
        "events": events,
        "objects": objects,
        "first_sync": first,
        "incremental_sync": incremental,
        "push_200_items": push,
        "store_read_ms": {
            "idle": {"p50": percentile(idle, 50), "p95": percentile(idle, 95), "n": len(idle)},
            "during_sync": {"p50": percentile(during, 50), "p95": percentile(during, 95), "n": len(during)},
        },
        "raw": {"phases": phases, "samples": [(round(t, 3), round(ms, 2)) for t, ms in samples]},
    }


def plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(11, 4))
    samples = result["raw"]["samples"]
    ax.plot([t for t, _ in samples], [ms for _, ms in samples], ".", markersize=3, color="tab:blue")
    for p in result["raw"]["phases"]:
        ax.axvspan(p["from_s"], p["to_s"], alpha=0.15, color="tab:orange")
        ax.text(p["from_s"], ax.get_ylim()[1] * 0.9, p["name"], fontsize=8)
    ax.set_xlabel("s since start")
    ax.set_ylabel("a day's agenda read, ms")
    ax.set_title(f"store reads beside a {result['events']}-event CalDAV sync (shaded: a sync runs)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(result: dict) -> str:
    reads = result["store_read_ms"]
    first, inc, push = result["first_sync"], result["incremental_sync"], result["push_200_items"]
    return "\n".join(
        [
            f"# CalDAV sync of {result['events']} events (commit {result['git_commit'][:8]}, "
            f"{result['machine']['cores']} cores, load {result['machine']['loadavg_1m']})",
            "",
            f"Radicale on 127.0.0.1 with {result['objects']} objects ({result['events']} occurrences over the horizon, "
            "two time zones, weekly series); one user; the sync as the background task runs it.",
            "",
            "| phase | seconds | what it did |",
            "|---|---|---|",
            f"| first sync (full listing) | {first['seconds']} | {first['report']} |",
            f"| incremental (10 edits, 5 deletions on the server) | {inc['seconds']} | {inc['report']} |",
            f"| a sync pushing 200 items written in Baton | {push['seconds']} | {push['report']} |",
            "",
            "A day's agenda read (PostgreSQL, on the sync's event loop and pool), every 50 ms:",
            "",
            "| | p50 ms | p95 ms | reads |",
            "|---|---|---|---|",
            f"| idle | {reads['idle']['p50']} | {reads['idle']['p95']} | {reads['idle']['n']} |",
            f"| while a sync runs | {reads['during_sync']['p50']} | {reads['during_sync']['p95']} | "
            f"{reads['during_sync']['n']} |",
            "",
            "![reads beside the sync](plot.png)",
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    from store.embedded import EmbeddedPostgres

    folder = Path(tempfile.mkdtemp(prefix="baton-bench-cal-"))
    database, dsn = None, os.environ.get("DATABASE_URL")
    if not dsn:
        database = EmbeddedPostgres(folder / "pgdata")
        dsn = database.start()
    try:
        result = asyncio.run(measure(dsn, folder, args.events))
    finally:
        if database is not None:
            database.stop()
        shutil.rmtree(folder, ignore_errors=True)
    result.update(**provenance())
    write(args.out, "results", result, report, lambda r, out: plot(r, out / "plot.png"))
    print(json.dumps({k: v for k, v in result.items() if k != "raw"}, indent=1, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
