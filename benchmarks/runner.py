"""One benchmark run: start (or reach) the systems, then the phases the scenario asks for, and the results.

Phases, in order: the encoder timed alone (before any system starts), the idle phase, the main sweep, the
open-loop sweep, the bursts, and the encoder timed alone again once every system has stopped. --quick runs the
quick load of the main sweep only.
"""

from __future__ import annotations

import asyncio
import os
import platform
import subprocess
import time
from pathlib import Path

from benchmarks import encoder_alone
from benchmarks.burst import run_burst
from benchmarks.foreground import BACKGROUND_POLICY, Foreground
from benchmarks.idle import run_idle
from benchmarks.report import derive
from benchmarks.scenario import Load, Mix, Scenario, kind_texts
from benchmarks.sweep import interleaved_sweep, write_raw
from benchmarks.systems import ROOT, RunningSystem, model_deployments, serve_config_path, start_system

START_TIMEOUT_S = 600.0


def _log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def _git_commit() -> str:
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    return out.stdout.strip()


def _str_levels(levels: dict[str, dict[float, dict]]) -> dict[str, dict[str, dict]]:
    return {name: {str(k): v for k, v in by_level.items()} for name, by_level in levels.items()}


class Runner:
    def __init__(
        self, scenario: Scenario, mix: Mix, *, out: Path, urls: dict[str, str], quick: bool, monolith_port: int | None
    ) -> None:
        self.scenario, self.mix, self.out, self.urls, self.quick = scenario, mix, out, urls, quick
        self.monolith_port = monolith_port
        self.load: Load = (scenario.quick or scenario.load) if quick else scenario.load
        self.specs = [s for s in scenario.systems if not urls or s.name in urls]
        if not self.specs:
            raise ValueError(f"none of {list(urls)} is a system of scenario {scenario.name!r}")
        self.raw = out / "raw"
        self._foreground: Foreground | None = None

    def _isolate(self, systems: list[RunningSystem]) -> dict:
        """While one system is measured the others this run started wait under SCHED_IDLE (benchmarks.foreground).
        Taking a system back out of it needs CAP_SYS_NICE; without it every system keeps its priority."""
        roots = {s.spec.name: s.process.pid for s in systems if s.process is not None}
        if len(roots) < 2:
            return {"background_nice": None, "reason": "fewer than two systems started here"}
        if os.geteuid() != 0:
            return {
                "background_nice": None,
                "reason": "not root: a system put in the background could not be raised again",
            }
        self._foreground = Foreground(roots)
        threads = self._foreground.focus(None)
        _log(f"isolation: while one system is measured the others wait under {BACKGROUND_POLICY} (threads: {threads})")
        return {"background_nice": None, "background": BACKGROUND_POLICY, "systems": sorted(roots)}

    def _focus(self, name: str | None, freeze: bool = False) -> bool:
        """Returns whether other systems are stopped now."""
        if self._foreground is None:
            return False
        if self._foreground.state != (name, freeze and name is not None):
            self._foreground.focus(name, freeze=freeze)
        return self._foreground.state[1]

    def _start(self) -> list[RunningSystem]:
        systems = []
        try:
            for spec in self.specs:
                if spec.name in self.urls:
                    systems.append(RunningSystem(spec=spec, url=self.urls[spec.name].rstrip("/")))
                    continue
                burst = self.scenario.burst
                extra = (
                    {d: {"autoscaling_config.upscale_delay_s": burst.upscale_delay_s} for d in model_deployments(spec)}
                    if burst and spec.name in burst.systems and spec.kind == "baton"
                    else {}
                )
                _log(f"starting {spec.name} ({spec.kind})")
                systems.append(
                    start_system(
                        spec,
                        workdir=self.raw / "systems" / spec.name,
                        pack=self.scenario.pack,
                        extra_deployments=extra,
                        monolith_port=self.monolith_port,
                        timeout_s=START_TIMEOUT_S,
                    )
                )
        except BaseException:
            for system in systems:
                system.stop()
            raise
        return systems

    def _encoder_alone(self, when: str) -> dict:
        spec = self.scenario.encoder_alone
        _log(f"encoder alone ({when}): the served runtime, {spec.threads} threads")
        result = encoder_alone.measure_in_subprocess(
            kind_texts(self.mix, spec.kind),
            threads=spec.threads,
            batch1_turns=spec.batch1_turns,
            batch_size=spec.batch_size,
            rounds=spec.rounds,
            warmup=spec.warmup,
        )
        _log(
            f"encoder alone ({when}): batch-1 p50 {result['batch1_ms']['p50']} ms, batch-{spec.batch_size} "
            f"{result['per_sentence_ms']} ms/sentence = ceiling {result['ceiling_turns_per_s']} turns/s"
        )
        return result

    def run(self) -> dict:
        started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        load0 = os.getloadavg()
        phases = not self.quick
        encoder = {"start": self._encoder_alone("start")} if phases and self.scenario.encoder_alone else None
        systems = self._start()
        try:
            isolation = self._isolate(systems)
            measured = asyncio.run(self._phases(systems, phases))
        finally:
            self._focus(None)
            for system in systems:
                _log(f"stopping {system.spec.name}")
                system.stop()
        if encoder is not None:
            try:
                encoder["end"] = self._encoder_alone("end")
            except Exception as exc:  # the run's numbers are kept; the pooled figure then rests on the start alone
                _log(f"encoder alone (end) failed: {exc}")
                encoder.update(end=None, end_error=str(exc)[-500:])
            encoder["pooled"] = encoder_alone.pool(encoder["start"], encoder.get("end"))
        result = {
            "scenario": self.scenario.model_dump(mode="json"),
            "mode": "quick" if self.quick else "full",
            "load": self.load.model_dump(mode="json"),
            "git_commit": _git_commit(),
            "pack": self.scenario.pack,
            "systems": {
                s.spec.name: {
                    "kind": s.spec.kind,
                    "url": s.url,
                    "started_here": s.process is not None,
                    "settings_overrides": s.spec.settings,
                    "serve_config_file": (
                        str(serve_config_path(s.spec).relative_to(ROOT)) if s.spec.kind == "baton" else None
                    ),
                    "serve_config": s.config,
                    "env": s.env,
                }
                for s in systems
            },
            "machine": {
                "cores": os.cpu_count(),
                "platform": platform.platform(),
                "python": platform.python_version(),
                "loadavg_at_start": [round(x, 2) for x in load0],
                "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
            },
            "started_at": started,
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "budget_ms": self.scenario.slo.budget_ms,
            "encoder_alone": encoder,
            "isolation": isolation,
            **measured,
        }
        return {**result, **derive(result)}

    async def _phases(self, systems: list[RunningSystem], phases: bool) -> dict:
        sc, urls = self.scenario, {s.spec.name: s.url for s in systems}
        idle = None
        if phases and sc.idle:
            _log(f"idle phase: {sc.idle.rounds} rounds x {sc.idle.turns_per_block} turns per system")
            idle, samples = await run_idle(
                urls,
                kind_texts(self.mix, sc.idle.kind),
                sc.idle,
                seed=sc.seed,
                timeout_s=sc.client_timeout_s,
                log=_log,
                focus=self._focus,
            )
            for name, rows in samples.items():
                write_raw(self.raw, f"idle-{name}", rows)
        idle_more = {}
        for extra in sc.idle_more if phases else []:
            _log(f"idle phase ({extra.kind}): {extra.rounds} rounds x {extra.turns_per_block} turns per system")
            idle_more[extra.kind], samples = await run_idle(
                urls,
                kind_texts(self.mix, extra.kind),
                extra,
                seed=sc.seed,
                timeout_s=sc.client_timeout_s,
                log=_log,
                focus=self._focus,
            )
            for name, rows in samples.items():
                write_raw(self.raw, f"idle-{extra.kind}-{name}", rows)
        common = dict(
            mix=self.mix,
            budget_ms=sc.slo.budget_ms,
            timeout_s=sc.client_timeout_s,
            raw=self.raw,
            log=_log,
            focus=self._focus,
        )
        _log(f"main sweep ({sc.arrival.process.value}): levels {self.load.levels} x {self.load.repeats} rounds")
        main = await interleaved_sweep(urls, load=self.load, arrival=sc.arrival, seed_base=sc.seed * 1000, **common)
        open_loop = None
        if phases and sc.open_loop:
            _log(
                f"open-loop sweep ({sc.open_loop.arrival.process.value}): levels {sc.open_loop.levels} "
                f"x {sc.open_loop.repeats} rounds"
            )
            open_loop = await interleaved_sweep(
                urls,
                load=sc.open_loop,
                arrival=sc.open_loop.arrival,
                seed_base=sc.seed * 1000 + 500,
                prefix="open-",
                **common,
            )
        bursts = []
        if phases and sc.burst:
            for name in sc.burst.systems:
                target = next(s for s in systems if s.spec.name == name)
                bursts.append(
                    await run_burst(
                        sc,
                        self.mix,
                        target,
                        main["levels"],
                        open_loop["levels"] if open_loop else None,
                        raw=self.raw,
                        log=_log,
                        focus=self._focus,
                    )
                )
        return {
            "runs": main["runs"],
            "levels": _str_levels(main["levels"]),
            "idle": idle,
            "idle_more": idle_more,
            "open_loop": (
                {
                    "load": sc.open_loop.model_dump(mode="json"),
                    "runs": open_loop["runs"],
                    "levels": _str_levels(open_loop["levels"]),
                }
                if open_loop
                else None
            ),
            "bursts": bursts,
        }
