"""The burst phase: a multiple of a system's measured capacity offered for a while, then a few turns to see it
recover."""

from __future__ import annotations

import asyncio
import json
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from benchmarks.driver import Window, run_window
from benchmarks.report import burst_summary, capacity
from benchmarks.scenario import Arrival, Load, Mix, Process, Scenario
from benchmarks.sweep import write_raw
from benchmarks.systems import RunningSystem

RECOVERY_TEXT = "把车窗关上吧"


def _recovery(url: str, turns: int, timeout_s: float) -> list[int]:
    codes = []
    for i in range(turns):
        body = json.dumps({"user_id": f"recovery-{i}", "text": RECOVERY_TEXT}).encode()
        request = urllib.request.Request(
            f"{url}/api/v1/agent/chat", data=body, headers={"content-type": "application/json"}
        )
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as resp:
                codes.append(resp.status)
        except urllib.error.HTTPError as exc:
            codes.append(exc.code)
        except OSError:
            codes.append(0)
    return codes


def burst_base(
    scenario: Scenario, name: str, main: dict[str, dict[float, dict]], open_loop: dict[str, dict[float, dict]] | None
) -> tuple[float | None, float | None, str]:
    """(capacity measured in this run, the rate the burst multiplies, where it came from) for one system.

    The open-loop sweep's capacity at SLO when there is one, else the main sweep's when it is open loop; when no
    level met the target, its lowest level. A closed-loop main sweep measures no turn rate: (None, None, "none").
    """
    target = scenario.slo.goodput_target
    if open_loop is not None:
        cap = capacity(open_loop[name], target)
        return cap, cap or min(open_loop[name]), "open_loop"
    if scenario.arrival.process != Process.closed:
        cap = capacity(main[name], target)
        return cap, cap or min(main[name]), "main"
    return None, None, "none"


async def run_burst(
    scenario: Scenario,
    mix: Mix,
    system: RunningSystem,
    main: dict,
    open_levels: dict | None,
    *,
    raw: Path,
    log: Callable[[str], None],
    focus: Callable[[str], object],
) -> dict:
    """One system's burst (`scenario.burst`), its raw samples written under `raw`; `focus(name)` runs before it."""
    burst, sc = scenario.burst, scenario
    name = system.spec.name
    cap, base, source = burst_base(sc, name, main, open_levels)
    rate = burst.rate_rps or round(burst.capacity_multiple * base, 2)
    arrival = (
        sc.open_loop.arrival if sc.open_loop else (sc.arrival if sc.arrival.process != Process.closed else Arrival())
    )
    load = Load(levels=[rate], ramp_up_s=0, warmup_s=0, duration_s=burst.duration_s)
    log(f"burst on {name}: {rate}/s for {burst.duration_s:g} s (capacity at SLO {cap}, from {source})")
    focus(name)
    window: Window = await run_window(
        system.url,
        mix=mix,
        load=load,
        arrival=arrival,
        level=rate,
        seed=sc.seed * 1000 + 999,
        timeout_s=sc.client_timeout_s,
    )
    write_raw(raw, f"burst-{name}", window.samples)
    await asyncio.sleep(burst.cooldown_s)
    recovery = await asyncio.to_thread(_recovery, system.url, burst.recovery_turns, sc.client_timeout_s)
    # the burst is sized on this run's capacity; when no level met the target here, on the lowest level
    summary = burst_summary(
        window,
        capacity_rps=base,
        offered_rps=rate,
        duration_s=burst.duration_s,
        budget_ms=sc.slo.budget_ms,
        recovery=recovery,
    )
    summary.update(
        system=name,
        upscale_delay_s=burst.upscale_delay_s,
        multiple=burst.capacity_multiple,
        capacity_measured_in_run=cap,
        capacity_source=source,
        abandoned_turns=window.abandoned_turns,
    )
    log(
        f"burst: sent {summary['sent']} accepted {summary['ok']} ({summary['accepted_in_budget_share']} in budget) "
        f"shed {summary['shed']} (without Retry-After {summary['shed_without_retry_after']}) lost {summary['lost']} "
        f"codes {summary['status_counts']} recovery {summary['recovery_statuses']}"
    )
    return summary
