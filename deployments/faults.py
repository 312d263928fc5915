"""Fault injection for model stages: `BATON_FAULTS="classifier:delay_ms=800;retriever:error=1"` or a replica's user_config."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field


class InjectedFault(Exception):
    pass


@dataclass(frozen=True)
class Fault:
    delay_ms: float = 0.0
    error: bool = False


@dataclass
class FaultSet:
    faults: dict[str, Fault] = field(default_factory=dict)
    cancelled: int = 0

    @classmethod
    def parse(cls, spec: str | None, *, stage: str | None = None) -> "FaultSet":
        """`stage:key=value,key=value;stage2:...` with keys delay_ms and error; an empty spec means no faults.

        With `stage` given (a replica's user_config), a spec without a `stage:` prefix applies to that stage.
        """
        faults: dict[str, Fault] = {}
        for part in filter(None, (p.strip() for p in (spec or "").replace(" ", ";").split(";"))):
            if ":" not in part and stage:
                part = f"{stage}:{part}"
            stage_name, _, options = part.partition(":")
            values: dict[str, str] = dict(kv.split("=", 1) for kv in options.split(",") if "=" in kv)
            unknown = set(values) - {"delay_ms", "error"}
            if not stage_name or unknown:
                raise ValueError(f"Bad fault spec '{part}': expected 'stage:delay_ms=N[,error=1]'.")
            faults[stage_name.strip()] = Fault(delay_ms=float(values.get("delay_ms", 0)), error=values.get("error", "0") not in ("0", "false", ""))
        return cls(faults)

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
