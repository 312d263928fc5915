"""Fault injection for model stages: `BATON_FAULTS="encoder:delay_ms=800;retriever:error=1"`, a replica's user_config,
or the run's faults file (`BATON_FAULTS_FILE`, same syntax), re-read by every replica when it changes.

Keys: `delay_ms` (sleep before the work), `error` (fail it), and for a language model `tokens` (it decodes that many
tokens, ignoring end-of-sequence and any schema: a slow model inside the real engine)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from pathlib import Path


class InjectedFault(Exception):
    pass


@dataclass(frozen=True)
class Fault:
    delay_ms: float = 0.0
    error: bool = False
    tokens: int = 0


@dataclass
class FaultSet:
    faults: dict[str, Fault] = field(default_factory=dict)
    cancelled: int = 0

    @classmethod
    def parse(cls, spec: str | None, *, stage: str | None = None) -> FaultSet:
        """`stage:key=value,key=value;stage2:...` with keys delay_ms and error; an empty spec means no faults.

        With `stage` given (a replica's user_config), a spec without a `stage:` prefix applies to that stage.
        """
        faults: dict[str, Fault] = {}
        for part in filter(None, (p.strip() for p in (spec or "").split(";"))):
            if ":" not in part:
                if not stage:
                    raise ValueError(f"Bad fault spec '{part}': expected 'stage:delay_ms=N[,error=1]'.")
                part = f"{stage}:{part}"
            stage_name, _, options = (x.strip() for x in part.partition(":"))
            values: dict[str, str] = {}
            for kv in filter(None, (o.strip() for o in options.split(","))):
                key, sep, value = (x.strip() for x in kv.partition("="))
                if not sep or not value or key not in ("delay_ms", "error", "tokens"):
                    raise ValueError(
                        f"Bad fault option '{kv}' in '{part}': expected delay_ms=N, error=0|1 or tokens=N."
                    )
                values[key] = value
            if not stage_name or not values:
                raise ValueError(f"Bad fault spec '{part}': expected 'stage:delay_ms=N[,error=1]'.")
            faults[stage_name] = Fault(
                delay_ms=float(values.get("delay_ms", 0)),
                error=_flag(values.get("error", "0")),
                tokens=_count(values.get("tokens", "0")),
            )
        return cls(faults)

    def failing(self, stages: tuple[str, ...]) -> frozenset[str]:
        """Which of `stages` are set to fail."""
        return frozenset(s for s in stages if s in self.faults and self.faults[s].error)

    async def delay(self, stages: tuple[str, ...]) -> None:
        """Sleep the configured delays of `stages` (one after the other), without raising their errors."""
        for stage in stages:
            fault = self.faults.get(stage)
            if fault is not None and fault.delay_ms:
                try:
                    await asyncio.sleep(fault.delay_ms / 1000.0)
                except asyncio.CancelledError:
                    self.cancelled += 1
                    raise

    async def apply(self, stage: str) -> None:
        """Sleep and/or raise as configured; counts cancellations so tests can observe them."""
        fault = self.faults.get(stage)
        if fault is None:
            return
        if fault.delay_ms:
            try:
                await asyncio.sleep(fault.delay_ms / 1000.0)
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        if fault.error:
            raise InjectedFault(f"injected failure in {stage}")


def _count(value: str) -> int:
    if not value.isdigit():
        raise ValueError(f"Bad fault count '{value}': expected a whole number of tokens.")
    return int(value)


def _flag(value: str) -> bool:
    lowered = value.lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"Bad fault flag '{value}': expected 0/1 or true/false.")


class FaultFile:
    """A fault spec in a file; `changed()` returns the new faults when the file changed (checked at most every
    `interval_s`), else None. A missing file means no faults; a bad spec keeps the previous faults."""

    def __init__(self, path: Path | None, *, interval_s: float = 0.2) -> None:
        self._path = path
        self._interval_s = interval_s
        self._checked = 0.0
        self._stamp: tuple[int, int] | None = None

    def changed(self) -> dict[str, Fault] | None:
        now = time.monotonic()
        if self._path is None or now - self._checked < self._interval_s:
            return None
        self._checked = now
        try:
            stat = self._path.stat()
            stamp = (stat.st_mtime_ns, stat.st_size)
        except FileNotFoundError:
            stamp = None
        if stamp == self._stamp:
            return None
        self._stamp = stamp
        try:
            return FaultSet.parse(self._path.read_text(encoding="utf-8") if stamp else "").faults
        except (OSError, ValueError):
            return None


class StageFaults:
    """Faults for a stage run outside the model replicas' body (the planner in the orchestrator, the LLM Planner
    deployment): `BATON_FAULTS`, a replica's user_config (`configure`) and the run's faults file, re-read when it
    changes; later sources win. Awaited at the start of the stage: sleeps and/or raises as configured."""

    def __init__(self, env_spec: str, path: Path | None) -> None:
        self._env = FaultSet.parse(env_spec).faults
        self._configured: dict[str, Fault] = {}
        self._file = FaultFile(path)
        self._from_file: dict[str, Fault] = {}

    def configure(self, spec: str, *, stage: str) -> None:
        """A user_config spec (a stage-less spec applies to `stage`); "" clears it."""
        self._configured = FaultSet.parse(spec, stage=stage).faults

    def current(self, stage: str) -> Fault | None:
        changed = self._file.changed()
        if changed is not None:
            self._from_file = changed
        return {**self._env, **self._configured, **self._from_file}.get(stage)

    async def __call__(self, stage: str) -> None:
        fault = self.current(stage)
        if fault is not None:
            await FaultSet({stage: fault}).apply(stage)
