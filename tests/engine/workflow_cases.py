"""Multi-step cases (tests/data/multistep_*.yaml) run through a TurnEngine and checked step by step."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from engine.turn import TurnEngine
from protocol.http_chat import ChatRequest

DATA = Path(__file__).resolve().parents[1] / "data"


def load_cases(name: str) -> list[dict[str, Any]]:
    return yaml.safe_load((DATA / f"multistep_{name}.yaml").read_text(encoding="utf-8"))


@dataclass
class Verdict:
    text: str
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems


async def check_case(engine: TurnEngine, worlds, case: dict[str, Any], user: str) -> Verdict:
    """Run the case's turn (and its follow-ups) for a fresh user; every mismatch is a problem."""
    verdict = Verdict(case["text"])
    resp = await engine.chat(ChatRequest(user_id=user, session_id=f"{user}-s", text=case["text"]))
    steps = resp.workflow.steps if resp.workflow else []
    got = [s.intent_id for s in steps] if steps else [resp.intent]
    if got != case["steps"]:
        verdict.problems.append(f"steps {got} != {case['steps']}")
    for intent, slots in (case.get("slots") or {}).items():
        step = next((s for s in steps if s.intent_id == intent), None)
        for k, v in slots.items():
            if step is None or step.slots.get(k) != v:
                verdict.problems.append(f"{intent}.{k} = {step.slots.get(k) if step else None} != {v}")
    want_status = case.get("status", "completed")
    if resp.status.value != want_status:
        verdict.problems.append(f"status {resp.status.value} != {want_status} ({resp.reply})")
    for intent in case.get("skipped", []):
        step = next((s for s in steps if s.intent_id == intent), None)
        if step is None or step.status.value != "skipped":
            verdict.problems.append(f"{intent} not skipped")
    for follow in case.get("then", []):
        resp = await engine.chat(ChatRequest(user_id=user, session_id=f"{user}-s", text=follow["text"]))
        if resp.status.value != follow.get("status", "completed"):
            verdict.problems.append(f"after {follow['text']}: status {resp.status.value} ({resp.reply})")
        _state(verdict, worlds, user, follow)
    _state(verdict, worlds, user, case)
    return verdict


def _state(verdict: Verdict, worlds, user: str, expected: dict[str, Any]) -> None:
    world = worlds.world(user)
    for k, v in (expected.get("vehicle") or {}).items():
        if getattr(world.vehicle, k) != v:
            verdict.problems.append(f"vehicle.{k} = {getattr(world.vehicle, k)} != {v}")
    for oid, status in (expected.get("orders") or {}).items():
        if world.order_status(oid) != status:
            verdict.problems.append(f"order {oid} = {world.order_status(oid)} != {status}")
