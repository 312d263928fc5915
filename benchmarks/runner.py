"""One benchmark run: start (or reach) the systems, sweep load levels interleaving systems, burst, write the results."""
from __future__ import annotations

import asyncio
import json
import os
import platform
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import asdict
from pathlib import Path

from benchmarks.driver import Window, run_window
from benchmarks.report import burst_summary, capacity, derive, window_summary
from benchmarks.scenario import Load, Mix, Scenario
from benchmarks.systems import ROOT, RunningSystem, start_system

MODEL_DEPLOYMENTS = ("IntentClassifier", "MultiIntentDetector", "EmbeddingRetriever")
SETTLE_S = 2.0  # pause between windows so one system's queue has drained before the next starts
START_TIMEOUT_S = 600.0
RECOVERY_TEXT = "把车窗关上吧"


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def _git_commit() -> str:
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip()


def _write_raw(raw: Path, name: str, window: Window) -> None:
    raw.mkdir(parents=True, exist_ok=True)
    with (raw / f"{name}.jsonl").open("w", encoding="utf-8") as f:
        for s in window.samples:
            f.write(json.dumps(asdict(s), ensure_ascii=False) + "\n")


def _recovery(url: str, turns: int, timeout_s: float) -> list[int]:
    codes = []
    for i in range(turns):
        body = json.dumps({"user_id": f"recovery-{i}", "text": RECOVERY_TEXT}).encode()
        request = urllib.request.Request(f"{url}/api/v1/agent/chat", data=body, headers={"content-type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as resp:
                codes.append(resp.status)
        except urllib.error.HTTPError as exc:
            codes.append(exc.code)
        except OSError:
            codes.append(0)
    return codes


class Runner:
    def __init__(self, scenario: Scenario, mix: Mix, *, out: Path, urls: dict[str, str], quick: bool,
                 monolith_port: int | None) -> None:
        self.scenario, self.mix, self.out, self.urls, self.quick = scenario, mix, out, urls, quick
        self.monolith_port = monolith_port
        self.load: Load = (scenario.quick or scenario.load) if quick else scenario.load
        self.specs = [s for s in scenario.systems if not urls or s.name in urls]
        if not self.specs:
            raise ValueError(f"none of {list(urls)} is a system of scenario {scenario.name!r}")
        self.raw = out / "raw"

    def _start(self) -> list[RunningSystem]:
        systems = []
        try:
            for spec in self.specs:
                if spec.name in self.urls:
                    systems.append(RunningSystem(spec=spec, url=self.urls[spec.name].rstrip("/")))
                    continue
                burst = self.scenario.burst
                extra = ({d: {"autoscaling_config.upscale_delay_s": burst.upscale_delay_s} for d in MODEL_DEPLOYMENTS}
                         if burst and spec.name in burst.systems and spec.kind == "baton" else {})
                _log(f"starting {spec.name} ({spec.kind})")
                systems.append(start_system(spec, workdir=self.raw / "systems" / spec.name, pack=self.scenario.pack,
                                            extra_deployments=extra, monolith_port=self.monolith_port,
                                            timeout_s=START_TIMEOUT_S))
        except BaseException:
            for system in systems:
                system.stop()
            raise
        return systems

    async def _window(self, system: RunningSystem, level: float, seed: int, load: Load, name: str) -> Window:
        window = await run_window(system.url, mix=self.mix, load=load, arrival=self.scenario.arrival, level=level,
                                  seed=seed, timeout_s=self.scenario.client_timeout_s)
        _write_raw(self.raw, name, window)
        return window

    def run(self) -> dict:
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        load0 = os.getloadavg()
        systems = self._start()
        try:
            sweep = asyncio.run(self._sweep(systems))
            levels = {s.spec.name: {lvl: r for lvl, r in sweep["pooled"][s.spec.name].items()} for s in systems}
            caps = {name: capacity(by_level, self.scenario.slo.goodput_target) for name, by_level in levels.items()}
            bursts = []
            if self.scenario.burst and not self.quick:
                for name in self.scenario.burst.systems:
                    target = next(s for s in systems if s.spec.name == name)
                    bursts.append(asyncio.run(self._burst(target, caps.get(name))))
        finally:
            for system in systems:
                _log(f"stopping {system.spec.name}")
                system.stop()
        result = {
            "scenario": self.scenario.model_dump(mode="json"),
            "mode": "quick" if self.quick else "full",
            "load": self.load.model_dump(mode="json"),
            "git_commit": _git_commit(),
            "pack": self.scenario.pack,
            "systems": {s.spec.name: {"kind": s.spec.kind, "url": s.url, "started_here": s.process is not None,
                                      "settings_overrides": s.spec.settings, "serve_config": s.config, "env": s.env} for s in systems},
            "machine": {"cores": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version(),
                        "loadavg_at_start": [round(x, 2) for x in load0],
                        "loadavg_at_end": [round(x, 2) for x in os.getloadavg()]},
            "started_at": started,
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "budget_ms": self.scenario.slo.budget_ms,
            "runs": sweep["runs"],
            "levels": {name: {str(k): v for k, v in by_level.items()} for name, by_level in levels.items()},
            "bursts": bursts,
        }
        return {**result, **derive(result)}

    async def _sweep(self, systems: list[RunningSystem]) -> dict:
        runs, load, slo = [], self.load, self.scenario.slo
        pooled_windows: dict[str, dict[float, list[Window]]] = {s.spec.name: {} for s in systems}
        for level in load.levels:
            for rnd in range(load.repeats):
                seed = self.scenario.seed * 1000 + rnd * 100 + load.levels.index(level)
                order = systems if rnd % 2 == 0 else list(reversed(systems))  # A B C, then C B A
                for system in order:
                    name = f"{system.spec.name}-{level:g}-{rnd}"
                    window = await self._window(system, level, seed, load, name)
                    summary = window_summary(window, duration_s=load.duration_s, budget_ms=slo.budget_ms)
                    runs.append({"system": system.spec.name, "level": level, "round": rnd, "summary": summary})
                    pooled_windows[system.spec.name].setdefault(level, []).append(window)
                    wall = summary["client_wall_ms"] or {}
                    _log(f"{name}: offered {summary['offered_rps']}/s goodput {summary['goodput_share']:.3f} "
                         f"p50 {wall.get('p50')} p99 {wall.get('p99')} ms codes {summary['status_counts']} "
                         f"client cpu {summary['client']['cpu_share']}")
                    await asyncio.sleep(SETTLE_S)
        pooled = {}
        for name, by_level in pooled_windows.items():
            pooled[name] = {}
            for level, windows in by_level.items():
                merged = Window(level=level, process=windows[0].process, samples=[s for w in windows for s in w.samples],
                                wall_s=sum(w.wall_s for w in windows), cpu_s=sum(w.cpu_s for w in windows),
                                loadavg_1m=max(w.loadavg_1m for w in windows),
                                abandoned_turns=sum(w.abandoned_turns for w in windows),
                                sent_conversations=sum(w.sent_conversations for w in windows))
                pooled[name][level] = window_summary(merged, duration_s=load.duration_s * len(windows), budget_ms=slo.budget_ms)
        return {"runs": runs, "pooled": pooled}

    async def _burst(self, system: RunningSystem, cap: float | None) -> dict:
        burst = self.scenario.burst
        base = cap if cap else min(self.load.levels)
        rate = burst.rate_rps or round(burst.capacity_multiple * base, 2)
        load = Load(levels=[rate], ramp_up_s=0, warmup_s=0, duration_s=burst.duration_s)
        _log(f"burst on {system.spec.name}: {rate}/s for {burst.duration_s:g} s (capacity at SLO {cap})")
        window = await self._window(system, rate, self.scenario.seed * 1000 + 999, load, f"burst-{system.spec.name}")
        await asyncio.sleep(burst.cooldown_s)
        recovery = await asyncio.to_thread(_recovery, system.url, burst.recovery_turns, self.scenario.client_timeout_s)
        # the burst is sized on this run's capacity; when no level met the target here, on the lowest level
        summary = burst_summary(window, capacity_rps=base, offered_rps=rate, duration_s=burst.duration_s,
                                budget_ms=self.scenario.slo.budget_ms, recovery=recovery)
        summary.update(system=system.spec.name, upscale_delay_s=burst.upscale_delay_s, multiple=burst.capacity_multiple,
                       capacity_measured_in_run=cap, abandoned_turns=window.abandoned_turns)
        _log(f"burst: sent {summary['sent']} accepted {summary['ok']} shed {summary['shed']} lost {summary['lost']} "
             f"codes {summary['status_counts']} recovery {summary['recovery_statuses']}")
        return summary
