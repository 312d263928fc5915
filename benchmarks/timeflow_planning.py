"""`python -m benchmarks.timeflow_planning`: seed 000's Scheduling chain on the held-out planning requests
(benchmarks/data/timeflow_planning_heldout.yaml), at the engine level over a real PostgreSQL store, rules only (no
classifier signal, no Serve).

Each request is planned for its user at the set's `now`: the users, their profiles (time zone, working hours) and
their items are seeded in the store first, and the chain reads the busy times through `ItemBusyTimes` over
store.facts, as execution does. Scored: the task level against the label (target ≥ 0.85), what is
missing against the label (exact set), and every proposed slot — inside the user's working hours in their zone,
in their free time, overlapping neither an item nor another slot of the same draft.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import tempfile
import time
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid4, uuid5
from zoneinfo import ZoneInfo

import yaml

from benchmarks.outputs import ROOT, provenance, write
from benchmarks.timeflow_planning_report import LEVELS, figure, markdown
from config.settings import load_settings
from engine.scheduling import Interval, ItemBusyTimes, SchedulingChain, Signal, WorkingHours, plan
from engine.scheduling.free_time import is_free, item_intervals
from protocol.agents import CandidateItem
from protocol.scheduling import SchedulingDraft
from store import facts, users
from store.database import Database

HELDOUT = ROOT / "benchmarks" / "data" / "timeflow_planning_heldout.yaml"
OUT = ROOT / "benchmarks" / "results" / "timeflow_planning"


def seeded_items(user: dict[str, Any], today: date, tz: ZoneInfo) -> list[CandidateItem]:
    items = []
    for i, row in enumerate(user["items"]):
        day = today + timedelta(days=row["day"])

        def at(clock: str, day: date = day) -> datetime:
            return datetime.combine(day, datetime.strptime(clock, "%H:%M").time(), tzinfo=tz)

        common = {"id": uuid5(NAMESPACE_URL, f"planning:{i}:{row['title']}"), "title": row["title"]}
        if "due" in row:
            items.append(CandidateItem(**common, item_type="todo", due_at=at(row["due"])))
        else:
            items.append(
                CandidateItem(**common, item_type="schedule", start_at=at(row["start"]), end_at=at(row["end"]))
            )
    return items


class StoreItems:
    """The user's items as execution reads them: store.facts over a real PostgreSQL."""

    def __init__(self, db: Database) -> None:
        self._db = db

    async def items(self, user_id: UUID, start_at: datetime, end_at: datetime) -> list[CandidateItem]:
        async with self._db.connection() as conn:
            return await facts.items_in_range(conn, user_id, start_at=start_at, end_at=end_at)


async def seed(db: Database, user: dict[str, Any], items: list[CandidateItem]) -> UUID:
    """A new user with `items` and a profile holding their time zone and working hours."""
    profile = {"timezone": user["time_zone"], "working_hours": user["working_hours"]}
    async with db.transaction() as conn:
        email = f"planning-{uuid4().hex[:12]}@bench.example"
        user_id: UUID = (await users.register(conn, email=email, password_hash="x", display_name=None)).id
        await conn.execute("INSERT INTO user_profiles (user_id, profile_data) VALUES ($1, $2)", user_id, profile)
        await conn.executemany(
            "INSERT INTO task_items (user_id, item_type, title, start_at, end_at, due_at)"
            " VALUES ($1, $2, $3, $4, $5, $6)",
            [(user_id, i.item_type, i.title, i.start_at, i.end_at, i.due_at) for i in items],
        )
    return user_id


def score_case(case: dict[str, Any], draft: SchedulingDraft, items: list[CandidateItem], tz: ZoneInfo) -> dict:
    """One request's scores: level and missing right, and each slot's checks."""
    hours = WorkingHours.of({"working_hours": draft.working_hours})
    busy = item_intervals(items)
    slots = [Interval(s.start_at, s.end_at) for s in draft.slots]
    outside = [i for i, s in enumerate(slots) if not is_free(s, tz=tz, hours=hours, busy=[])]
    overlapping = [i for i, s in enumerate(slots) if any(s.overlaps(b) for b in busy)]
    clashing = [i for i, s in enumerate(slots) if any(s.overlaps(o) for j, o in enumerate(slots) if j != i)]
    return {
        "text": case["text"],
        "user": case.get("user", "shanghai"),
        "level": case["level"],
        "got_level": draft.task_level,
        "level_right": draft.task_level == case["level"],
        "missing": sorted(case.get("missing", [])),
        "got_missing": sorted(draft.missing),
        "missing_right": sorted(case.get("missing", [])) == sorted(draft.missing),
        "slots": len(slots),
        "slots_outside_working_hours": len(outside),
        "slots_overlapping_items": len(overlapping),
        "slots_overlapping_each_other": len(clashing),
        "title": draft.title,
        "draft_text": draft.draft_text,
    }


def summarize(rows: list[dict]) -> dict:
    n = len(rows)
    slots = sum(r["slots"] for r in rows)
    by_level = {
        level: {
            "n": sum(1 for r in rows if r["level"] == level),
            "right": sum(1 for r in rows if r["level"] == level and r["level_right"]),
        }
        for level in LEVELS
    }
    confusion = {
        a: {b: sum(1 for r in rows if r["level"] == a and r["got_level"] == b) for b in LEVELS} for a in LEVELS
    }
    return {
        "requests": n,
        "level_accuracy": round(sum(r["level_right"] for r in rows) / n, 3) if n else 0.0,
        "missing_exact": round(sum(r["missing_right"] for r in rows) / n, 3) if n else 0.0,
        "by_level": by_level,
        "confusion": confusion,
        "slots": slots,
        "requests_without_slots": sum(1 for r in rows if r["slots"] == 0),
        "slots_outside_working_hours": sum(r["slots_outside_working_hours"] for r in rows),
        "slots_overlapping_items": sum(r["slots_overlapping_items"] for r in rows),
        "slots_overlapping_each_other": sum(r["slots_overlapping_each_other"] for r in rows),
    }


async def run(db: Database, path: Path = HELDOUT, *, with_engine: bool = False) -> dict:
    """Every held-out request planned for its seeded user over the store, scored. `with_engine`: also through the
    timeflow pack's turn engine with its built models, to say which reach the chain and the level with the
    classifier's signal."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    turns = {}
    if with_engine:
        from benchmarks.planning_route import engine_turns

        shanghai = ZoneInfo(data["users"]["shanghai"]["time_zone"])
        now = datetime.fromisoformat(data["now_local"]).replace(tzinfo=shanghai)
        turns = await engine_turns([c["text"] for c in data["requests"]], now)
    chain, rows, busy_times = SchedulingChain(), [], ItemBusyTimes(StoreItems(db))
    seeded: dict[str, tuple[UUID, list[CandidateItem], ZoneInfo, datetime]] = {}
    for name, user in data["users"].items():
        tz = ZoneInfo(user["time_zone"])
        now = datetime.fromisoformat(data["now_local"]).replace(tzinfo=tz)
        items = seeded_items(user, now.date(), tz)
        seeded[name] = (await seed(db, user, items), items, tz, now)
    started = time.perf_counter()
    for case in data["requests"]:
        user_id, items, tz, now = seeded[case.get("user", "shanghai")]
        async with db.connection() as conn:
            profile = await facts.profile_data(conn, user_id)
        draft = await plan(chain, case["text"], user_id=user_id, now=now, busy_times=busy_times, profile=profile)
        rows.append(score_case(case, draft, items, tz))
        turn = turns.get(case["text"])
        if turn is not None:
            given = turn["signal"].get("classifier_intent") or turn["intent"]
            signal = Signal(given, float(turn["signal"].get("classifier_score") or 0.0)) if given else None
            with_signal = await plan(
                chain, case["text"], user_id=user_id, now=now, busy_times=busy_times, profile=profile, signal=signal
            )
            rows[-1]["engine"] = {**turn, "level_with_signal": with_signal.task_level}
    elapsed = time.perf_counter() - started
    summary = summarize(rows)
    if turns:
        summary["engine"] = {
            "reached_the_chain": sum(1 for r in rows if r["engine"]["reached"]),
            "level_accuracy_with_signal": round(
                sum(r["engine"]["level_with_signal"] == r["level"] for r in rows) / len(rows), 3
            ),
        }
    return {"summary": summary, "rows": rows, "ms_per_request": round(elapsed * 1000 / len(rows), 2)}


async def _measured(dsn: str | None, with_engine: bool) -> dict:
    if dsn is not None:
        return await _on(dsn, with_engine)
    from store.embedded import EmbeddedPostgres

    folder = Path(tempfile.mkdtemp(prefix="baton-planning-"))
    server = EmbeddedPostgres(folder / "pgdata")
    try:
        return await _on(server.start(), with_engine)
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


async def _on(dsn: str, with_engine: bool) -> dict:
    db = await Database.open(dsn, load_settings(ROOT / "config", {}).database)
    try:
        return await run(db, with_engine=with_engine)
    finally:
        await db.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", help="a PostgreSQL to seed (default: an embedded server in a temp folder)")
    parser.add_argument(
        "--engine",
        action="store_true",
        help="also run each request through the timeflow pack's turn engine (its built models, in-process)",
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    result = asyncio.run(_measured(args.dsn, args.engine))
    result["provenance"] = provenance()
    print(write(OUT, "report", result, markdown, figure))


if __name__ == "__main__":
    main()
