"""An interleaved load sweep: every level runs every system in turn (A B C, then C B A) on the same seeded requests."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import asdict
from pathlib import Path

from benchmarks.driver import Sample, Window, run_window
from benchmarks.report import window_summary
from benchmarks.scenario import Arrival, Load, Mix

SETTLE_S = 2.0  # pause between windows so one system's queue has drained before the next starts


def write_raw(raw: Path, name: str, samples: list[Sample]) -> None:
    raw.mkdir(parents=True, exist_ok=True)
    with (raw / f"{name}.jsonl").open("w", encoding="utf-8") as f:
        for s in samples:
            f.write(json.dumps(asdict(s), ensure_ascii=False) + "\n")


def pool_windows(windows: list[Window], *, duration_s: float, budget_ms: float) -> dict:
    """One summary of several windows at one level (their measured durations add up)."""
    merged = Window(
        level=windows[0].level,
        process=windows[0].process,
        samples=[s for w in windows for s in w.samples],
        wall_s=sum(w.wall_s for w in windows),
        cpu_s=sum(w.cpu_s for w in windows),
        loadavg_1m=max(w.loadavg_1m for w in windows),
        abandoned_turns=sum(w.abandoned_turns for w in windows),
        sent_conversations=sum(w.sent_conversations for w in windows),
    )
    return window_summary(merged, duration_s=duration_s * len(windows), budget_ms=budget_ms)


def _log_line(name: str, summary: dict) -> str:
    wall = summary["client_wall_ms"] or {}
    return (
        f"{name}: offered {summary['offered_rps']}/s goodput {summary['goodput_share']:.3f} "
        f"clean {summary['clean_goodput_rps']}/s p50 {wall.get('p50')} p99 {wall.get('p99')} ms "
        f"codes {summary['status_counts']} client cpu {summary['client']['cpu_share']}"
    )


async def interleaved_sweep(
    urls: dict[str, str],
    *,
    mix: Mix,
    load: Load,
    arrival: Arrival,
    seed_base: int,
    budget_ms: float,
    timeout_s: float,
    raw: Path,
    prefix: str = "",
    log: Callable[[str], None] = print,
    window: Callable[..., Awaitable[Window]] = run_window,
    focus: Callable[[str], object] = lambda name: None,
) -> dict:
    """Run `load` on every system of `urls` (name → base URL); returns
    {"runs": [...], "levels": {name: {level: summary}}}.

    Raw samples go to `raw/<prefix><system>-<level>-<round>.jsonl`; the seed of a (level, round) is the same for
    every system, so each sees the same requests. `focus(name)` runs before each window (benchmarks.foreground).
    """
    runs: list[dict] = []
    windows: dict[str, dict[float, list[Window]]] = {name: {} for name in urls}
    names = list(urls)
    for index, level in enumerate(load.levels):
        for rnd in range(load.repeats):
            seed = seed_base + rnd * 100 + index
            for name in names if rnd % 2 == 0 else list(reversed(names)):
                label = f"{prefix}{name}-{level:g}-{rnd}"
                focus(name)
                result = await window(
                    urls[name], mix=mix, load=load, arrival=arrival, level=level, seed=seed, timeout_s=timeout_s
                )
                write_raw(raw, label, result.samples)
                summary = window_summary(result, duration_s=load.duration_s, budget_ms=budget_ms)
                runs.append({"system": name, "level": level, "round": rnd, "summary": summary})
                windows[name].setdefault(level, []).append(result)
                log(_log_line(label, summary))
                await asyncio.sleep(SETTLE_S)
    levels = {
        name: {
            level: pool_windows(ws, duration_s=load.duration_s, budget_ms=budget_ms) for level, ws in by_level.items()
        }
        for name, by_level in windows.items()
    }
    return {"runs": runs, "levels": levels}


def sweep_seconds(load: Load, systems: int, drain_s: float = 1.0) -> float:
    """Rough wall time of a sweep: per window its warm-up, duration, a drain and the settle pause."""
    return len(load.levels) * load.repeats * systems * (load.warmup_s + load.duration_s + drain_s + SETTLE_S)


__all__ = ["interleaved_sweep", "pool_windows", "write_raw", "sweep_seconds", "SETTLE_S"]
