"""Scoring of the TimeFlow everyday set: what a case's HTTP responses show (`observe`), each case against its labels
(`score`), and the figures over the set (`summarize`). Pure functions over the responses' JSON; no server needed.

What each label is compared with:
- agent + function: the last agent the turns decided (`agent.target_agent_name` / `target_function_name`).
- range: a create's or a move's new item time (the write's payload), a split's goal deadline, otherwise the time
  range the decision acts on (`dialogue.decision`'s `time_range`: the day a feedback or a cancel names, a query's or a
  review's period).
- title: a new item's or goal's title; for a write on an existing item, the title of the item it targets.
- converged: a case that answered a clarification ends waiting for its confirmation, and the confirmation applies.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

TARGETS = {"agent_function": 0.95, "range": 0.95, "title": 0.9, "converged": 1.0}


@dataclass
class Observed:
    agent: str | None = None
    function: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    deadline: datetime | None = None
    title: str | None = None
    asked: list[str] = field(default_factory=list)  # the clarifications' question types, in order
    confirmation: bool = False  # the last turn waits for a write's confirmation
    applied: bool | None = None  # the confirmation applied (None: nothing to confirm)
    reply: str = ""


def _when(value: Any) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) and value else None


def _events(response: dict) -> list[dict]:
    return (response.get("agent") or {}).get("events") or []


def observe(responses: list[dict], items: dict[str, str], *, applied: bool | None = None) -> Observed:
    """What the turns of one case show. `items`: the setup items' ids → titles; `applied`: whether the final
    confirmation applied (None when none was sent)."""
    seen = Observed(applied=applied)
    for response in responses:
        agent = response.get("agent") or {}
        question = agent.get("clarification")
        if agent.get("status") == "waiting_clarification" and question:
            seen.asked.append(question.get("question_type", ""))
            seen.agent = question.get("original_agent_name") or seen.agent
            seen.function = question.get("original_function_name") or seen.function
        for event in _events(response):
            if event["type"] == "dialogue.decision":
                body = event["payload"]
                seen.agent, seen.function = body["target_agent_name"], body["target_function_name"]
                span = body.get("time_range") or {}
                seen.start, seen.end = _when(span.get("start_at")), _when(span.get("end_at"))
        seen.reply = response.get("reply", "")
    last = responses[-1] if responses else {}
    write = (last.get("agent") or {}).get("write_request")
    seen.confirmation = last.get("status") == "waiting_confirmation" and write is not None
    if write:
        _read_write(seen, write.get("confirmation_payload") or {}, items)
    return seen


def _read_write(seen: Observed, proposal: dict, items: dict[str, str]) -> None:
    payload = proposal.get("payload") or {}
    action = proposal.get("action")
    if action in ("create", "update") and proposal.get("target_type") == "task_item":
        start, end, due = (_when(payload.get(k)) for k in ("start_at", "end_at", "due_at"))
        if start or due:
            seen.start, seen.end = (start, end) if start else (due, due)
        if action == "create":
            seen.title = payload.get("title")
    if action == "goal_split":
        goal = payload.get("goal") or {}
        seen.title, seen.deadline = goal.get("title"), _when(goal.get("deadline_at"))
    if action != "create" and seen.title is None:
        named = json.dumps(proposal, ensure_ascii=False)
        seen.title = next((title for id_, title in items.items() if id_ in named), None)


def _local(value: str, tz: ZoneInfo) -> datetime:
    return datetime.fromisoformat(value).replace(tzinfo=tz)


def range_right(label: dict, seen: Observed, tz: ZoneInfo) -> bool:
    """The observed time against a range label ({start, end} | {start} | {within} | {deadline_within})."""
    if "deadline_within" in label:
        low, high = (_local(v, tz) for v in label["deadline_within"])
        return seen.deadline is not None and low <= seen.deadline <= high
    if seen.start is None:
        return False
    if "within" in label:
        low, high = (_local(v, tz) for v in label["within"])
        return low <= seen.start < high and (seen.end or seen.start) <= high
    if seen.start != _local(label["start"], tz):
        return False
    return "end" not in label or seen.end == _local(label["end"], tz)


def score(case: dict, seen: Observed, tz: ZoneInfo) -> dict[str, bool | None]:
    """Each figure for one case: True / False, or None where the case has no such label."""
    expect = case["expect"]
    answered = any(isinstance(t, dict) for t in case["turns"])
    # only a case whose request lacks something (it says an answer) counts toward convergence
    converged = seen.confirmation and seen.applied is not False if answered else None
    return {
        "agent_function": (seen.agent, seen.function) == (expect["agent"], expect["function"]),
        "range": range_right(expect["range"], seen, tz) if expect.get("range") else None,
        "title": (seen.title in expect["title"]) if expect.get("title") else None,
        "confirmation": seen.confirmation if expect.get("confirm") else None,
        "converged": converged,
    }


def summarize(scored: list[dict[str, bool | None]]) -> dict[str, dict[str, float | int]]:
    """Per figure: how many cases it counts, how many are right, the share, and the target."""
    figures: dict[str, dict[str, float | int]] = {}
    for name in ("agent_function", "range", "title", "confirmation", "converged"):
        counted = [s[name] for s in scored if s[name] is not None]
        right = sum(1 for v in counted if v)
        figures[name] = {
            "cases": len(counted),
            "right": right,
            "share": round(right / len(counted), 4) if counted else 0.0,
            "target": TARGETS.get(name, 0.0),
        }
    return figures
