"""The planner benchmark's plans phase: the LLM planner's request as the app builds it, and multi-step utterances
(benchmarks/data/plans_cockpit.yaml) planned as chat turns, then by the LLM without a deadline, each plan judged."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import jsonschema
import yaml

from benchmarks.stats import distribution

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "benchmarks" / "data" / "plans_cockpit.yaml"


def planner_for(pack_name: str):
    """The cockpit pack's LLM planner, as the app builds it, with a model that only records the request."""
    from config.settings import load_settings
    from engine.llm.lm import LmReply
    from engine.llm.planner import LlmWorkflowPlanner
    from engine.llm.prompts import PromptSet
    from engine.pack import find_pack, load_pack

    class Capture:
        async def complete(self, request):
            self.request = request
            return LmReply(text="{}", finish_reason="stop", prompt_tokens=0, completion_tokens=0)

        async def abort(self, request_id):
            pass

    settings = load_settings(ROOT / "config", {"BATON_PACK": pack_name})
    pack_dir = find_pack(pack_name, shipped_dir=settings.packs_dir, state_dir=settings.state_dir)
    pack = load_pack(pack_dir)
    capture = Capture()
    return (
        LlmWorkflowPlanner.configured(capture, pack, PromptSet.load(pack_dir, settings.prompts), settings),
        capture,
        pack,
        settings,
    )


async def planning_request(planner, capture, text: str) -> dict:
    """The messages and schema the planner sends for `text` (as /v1/chat/completions fields)."""
    from engine.deadline import Deadline

    await planner.plan(text, deadline=Deadline(60_000), budget_s=30.0, now=datetime.now(ZoneInfo("Asia/Shanghai")))
    request = capture.request
    return {
        "messages": request.messages,
        "max_tokens": request.max_tokens,
        "temperature": 0.0,
        "response_format": {"type": "json_schema", "json_schema": {"name": "plan", "schema": request.json_schema}},
    }


def judge_llm(raw: str, schema: dict, case: dict, clauses: list[dict], pack, settings) -> dict:
    """Schema-valid, catalog-valid, grounded, correct: how far the LLM's plan for `case` gets."""
    from engine.llm.grounding import ungrounded
    from engine.llm.plan_validation import RejectedPlan, validate_plan
    from engine.slots import extract_slots
    from engine.workflow.analysis import ClauseScore

    out = {"schema_valid": False, "valid": False, "grounded": False, "correct": False}
    try:
        jsonschema.validate(json.loads(raw), schema)
        out["schema_valid"] = True
    except (ValueError, jsonschema.ValidationError):
        return out
    tz = ZoneInfo(settings.timezone)
    checked = validate_plan(
        raw, pack, max_steps=settings.planner.max_steps, tz=tz, now=datetime.now(tz), text=case["text"]
    )
    if isinstance(checked, RejectedPlan):
        return out
    out["valid"] = True
    steps = [s.intent_id for s in checked.workflow.steps]
    out["correct"] = steps == case["steps"]
    scores = [ClauseScore(text=c["text"], scores={x["intent"]: x["score"] for x in c["candidates"]}) for c in clauses]
    extract = lambda text, specs: extract_slots(text, specs, now=datetime.now(tz), tz=tz)  # noqa: E731
    out["grounded"] = bool(scores) and not ungrounded(
        checked.workflow,
        text=case["text"],
        clauses=scores,
        pack=pack,
        extract=extract,
        min_evidence=settings.planner.llm_min_evidence,
    )
    out["steps"] = steps
    return out


async def chat(client: httpx.AsyncClient, body: dict, *, attempts: int = 3) -> dict:
    """A chat turn as a client sends it: a shed 503 is sent again after its Retry-After."""
    for _ in range(attempts):
        answer = await client.post("/api/v1/agent/chat", json=body)
        if answer.status_code != 503 or "retry-after" not in answer.headers:
            break
        await asyncio.sleep(float(answer.headers["retry-after"]))
    return answer.json()


async def plans(url: str, pack_name: str) -> dict:
    planner, capture, pack, settings = planner_for(pack_name)
    cases = yaml.safe_load(CASES.read_text(encoding="utf-8"))
    rows = []
    async with httpx.AsyncClient(base_url=url, timeout=120.0) as client:
        for n, case in enumerate(cases):
            turn = await chat(client, {"user_id": f"plan-{n}", "text": case["text"]})
            if "timings" not in turn:  # refused even after its retries: counted, not planned
                rows.append(
                    {
                        "text": case["text"],
                        "expected": case["steps"],
                        "refused": turn.get("error"),
                        "served": None,
                        "llm": None,
                    }
                )
                continue
            debug = (turn.get("routing_debug") or {}).get("planner") or {}
            wf = turn.get("workflow") or {}
            served = {
                "accepted_by": debug.get("accepted_by"),
                "steps": [s["intent_id"] for s in wf.get("steps", [])],
                "llm": (debug.get("llm") or {}).get("outcome"),
                "total_ms": turn["timings"]["total_ms"],
                "escalated": turn["timings"]["escalated"],
                "degraded": turn["timings"]["degraded"],
            }
            served["correct"] = served["steps"] == case["steps"]
            body = await planning_request(planner, capture, case["text"])
            started = time.perf_counter()
            answer = (
                await client.post("/v1/chat/completions", json={"model": settings.llm.served_model_name, **body})
            ).json()
            llm_ms = (time.perf_counter() - started) * 1000
            raw = answer["choices"][0]["message"]["content"]
            judged = judge_llm(
                raw, body["response_format"]["json_schema"]["schema"], case, debug.get("clauses", []), pack, settings
            )
            rows.append(
                {
                    "text": case["text"],
                    "expected": case["steps"],
                    "served": served,
                    "llm": {**judged, "ms": round(llm_ms, 1), "tokens": answer["usage"]["completion_tokens"]},
                }
            )
    refused = [r for r in rows if r["served"] is None]
    rows = [r for r in rows if r["served"] is not None]

    def share(flags) -> float:
        return round(sum(bool(f) for f in flags) / len(rows), 3)

    local = [r["served"]["accepted_by"] not in (None, "llm") for r in rows]
    return {
        "cases": len(rows),
        "rows": rows,
        "refused": refused,
        "local": {
            "accepted": share(local),
            "correct": share(r["served"]["correct"] and ok for r, ok in zip(rows, local, strict=True)),
        },
        "served_llm": {
            "escalated": share(r["served"]["escalated"] for r in rows),
            "outcomes": {
                o: sum(r["served"]["llm"] == o for r in rows)
                for o in ("accepted", "rejected", "timed_out", "error", "held")
            },
            "correct": share(r["served"]["correct"] and r["served"]["accepted_by"] == "llm" for r in rows),
            "escalated_total_ms": distribution([r["served"]["total_ms"] for r in rows if r["served"]["escalated"]]),
        },
        "served_overall_correct": share(r["served"]["correct"] for r in rows),
        "llm_unbounded": {
            **{k: share(r["llm"][k] for r in rows) for k in ("schema_valid", "valid", "grounded", "correct")},
            "ms": distribution([r["llm"]["ms"] for r in rows]),
        },
    }
