"""`python -m benchmarks.planner`: the LLM planner's endpoint and its plans, on the served app (cockpit pack).

Starts Baton (the Planner deployment: vLLM on the CPU, gemma-3-270m) on a throwaway embedded PostgreSQL, then
1. streams `/v1/chat/completions` at 1, 2 and 4 concurrent clients with the planner's own prompt and schema (vLLM
   `bench serve`'s vocabulary: TTFT, TPOT, ITL, end to end, tokens/s, goodput inside stages_ms.planner_llm);
2. plans benchmarks/data/plans_cockpit.yaml as chat turns, then without a deadline: the share of LLM plans that are
   schema-valid, catalog-valid, grounded and correct, next to the local planners'.
Writes JSON, markdown and a figure under benchmarks/results/planner/.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
import jsonschema
import yaml

from benchmarks.outputs import provenance, write
from benchmarks.stats import distribution

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "benchmarks" / "data" / "plans_cockpit.yaml"
PROMPT_TEXT = "把车窗打开，然后空调开到二十二度"  # the endpoint phase's request: a real planning prompt


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


async def one_stream(client: httpx.AsyncClient, body: dict) -> dict:
    started = time.perf_counter()
    arrivals, usage, finish = [], None, None
    async with client.stream("POST", "/v1/chat/completions", json={**body, "stream": True}) as response:
        async for line in response.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            choice = chunk["choices"][0]
            if choice["delta"].get("content"):
                arrivals.append(time.perf_counter())
            usage = chunk.get("usage") or usage
            finish = choice.get("finish_reason") or finish
    e2e = (time.perf_counter() - started) * 1000
    ttft = (arrivals[0] - started) * 1000 if arrivals else None
    tokens = (usage or {}).get("completion_tokens", len(arrivals))
    return {
        "ttft_ms": ttft,
        "e2e_ms": e2e,
        "tokens": tokens,
        "finish_reason": finish,
        "itl_ms": [(b - a) * 1000 for a, b in zip(arrivals, arrivals[1:])],
        "tpot_ms": (e2e - ttft) / (tokens - 1) if ttft is not None and tokens > 1 else None,
    }


async def endpoint(url: str, body: dict, concurrency: int, requests: int, slo_ms: float) -> dict:
    async with httpx.AsyncClient(base_url=url, timeout=120.0) as client:
        queue = list(range(requests))
        results: list[dict] = []

        async def worker() -> None:
            while queue:
                queue.pop()
                results.append(await one_stream(client, body))

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        wall = time.perf_counter() - started
    return {
        "concurrency": concurrency,
        "requests": len(results),
        "wall_s": round(wall, 2),
        "ttft_ms": distribution([r["ttft_ms"] for r in results if r["ttft_ms"] is not None]),
        "tpot_ms": distribution([r["tpot_ms"] for r in results if r["tpot_ms"] is not None]),
        "itl_ms": distribution([x for r in results for x in r["itl_ms"]]),
        "e2e_ms": distribution([r["e2e_ms"] for r in results]),
        "output_tokens_per_s": round(sum(r["tokens"] for r in results) / wall, 2),
        "requests_per_s": round(len(results) / wall, 3),
        "goodput_per_s": round(sum(r["e2e_ms"] <= slo_ms for r in results) / wall, 3),
        "finish_reasons": {
            f: sum(r["finish_reason"] == f for r in results) for f in {r["finish_reason"] for r in results}
        },
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
            "correct": share(r["served"]["correct"] and ok for r, ok in zip(rows, local)),
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


def markdown(result: dict) -> str:
    lines = [
        f"# LLM planner (cockpit pack, {result['model']})",
        "",
        f"Commit `{result['git_commit'][:10]}`, {result['machine']['cores']} cores, load average {result['machine']['loadavg_1m']} "
        f"at the end; the Planner's engine: vLLM (CPU) with {result['llm_settings']['threads']} thread(s), enforce_eager "
        f"{result['llm_settings']['enforce_eager']}.",
        "",
        "## The endpoint (`/v1/chat/completions`, streaming, the planner's prompt and plan schema)",
        "",
        "| concurrency | requests | TTFT p50 / p99 ms | TPOT p50 ms | ITL p50 / p99 ms | e2e p50 / p99 ms | output tok/s | goodput req/s (e2e ≤ "
        f"{result['slo_ms']:.0f} ms) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for level in result["endpoint"]:
        t, p, i, e = level["ttft_ms"], level["tpot_ms"], level["itl_ms"], level["e2e_ms"]
        lines.append(
            f"| {level['concurrency']} | {level['requests']} | {t['p50']:.0f} / {t['p99']:.0f} | {p['p50']:.1f} | "
            f"{i['p50']:.1f} / {i['p99']:.1f} | {e['p50']:.0f} / {e['p99']:.0f} | {level['output_tokens_per_s']} | "
            f"{level['goodput_per_s']} |"
        )
    q = result["plans"]
    u, s = q["llm_unbounded"], q["served_llm"]
    lines += [
        "",
        f"## Plans ({q['cases']} multi-step utterances, benchmarks/data/plans_cockpit.yaml)",
        "",
        "| | share |",
        "|---|---|",
        f"| local planners accepted | {q['local']['accepted']} |",
        f"| local planners correct | {q['local']['correct']} |",
        f"| turns escalated to the LLM planner | {s['escalated']} |",
        f"| escalated turns answered by an LLM plan that ran and was correct | {s['correct']} |",
        f"| served turns with the intended steps, all planners | {q['served_overall_correct']} |",
        f"| LLM plan, no deadline: schema-valid | {u['schema_valid']} |",
        f"| LLM plan, no deadline: valid against the catalog | {u['valid']} |",
        f"| LLM plan, no deadline: grounded in the words (would run) | {u['grounded']} |",
        f"| LLM plan, no deadline: correct | {u['correct']} |",
        "",
        f"Escalated turns: outcomes {s['outcomes']}; total_ms p50 {_p(s['escalated_total_ms'], 'p50')}, "
        f"p99 {_p(s['escalated_total_ms'], 'p99')} (budget {result['llm_turn_ms']:.0f} ms). "
        f"An LLM plan without a deadline took p50 {_p(u['ms'], 'p50')} ms.",
        "",
        "gemma-3-270m is a base model: these figures show the serving path (structured output, validation, "
        "grounding, budget, abort), not planning quality. A GPU cluster serves an instruct model (config/serve_gpu.yaml).",
        "",
    ]
    return "\n".join(lines)


def _p(dist: dict | None, key: str) -> str:
    return f"{dist[key]:.0f}" if dist else "–"


def figure(result: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
    levels = [str(l["concurrency"]) for l in result["endpoint"]]
    for key, label in (("ttft_ms", "TTFT p50"), ("e2e_ms", "e2e p50")):
        left.plot(levels, [l[key]["p50"] for l in result["endpoint"]], marker="o", label=label)
    left.axhline(result["slo_ms"], color="grey", linestyle="--", label="planner_llm budget")
    left.set(xlabel="concurrent clients", ylabel="ms", title="Planner endpoint")
    left.legend()
    u = result["plans"]["llm_unbounded"]
    names = ["schema-valid", "catalog-valid", "grounded", "correct", "local correct"]
    values = [u["schema_valid"], u["valid"], u["grounded"], u["correct"], result["plans"]["local"]["correct"]]
    right.bar(names, values, color=["#4c72b0"] * 4 + ["#55a868"])
    right.set(ylim=(0, 1), title="Plans (share of utterances)")
    right.tick_params(axis="x", rotation=20)
    fig.tight_layout()
    fig.savefig(out / "planner.png", dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.planner", description=__doc__.splitlines()[0])
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--requests", type=int, default=12, help="requests per concurrency level")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "planner")
    args = parser.parse_args(argv)

    from config.settings import load_settings
    from serve_app.ops import launcher
    from store.embedded import EmbeddedPostgres

    [port] = launcher.free_ports(1)
    env = {**os.environ, "BATON_PACK": "cockpit"}
    settings = load_settings(ROOT / "config", env)
    database = None
    if not env.get("DATABASE_URL"):
        database = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="baton-bench-pg-")) / "pgdata")
        env["DATABASE_URL"] = database.start()
    config = launcher.load_serve_config(ROOT / "config" / "serve_local.yaml", env, port=port)
    url, slo_ms = f"http://127.0.0.1:{port}", settings.budgets.stages_ms["planner_llm"]
    launcher.start(config, env)
    try:
        launcher.wait_until_healthy(port, timeout_s=600)
        planner, capture, _, _ = planner_for("cockpit")
        body = {"model": settings.llm.served_model_name, **asyncio.run(planning_request(planner, capture, PROMPT_TEXT))}
        levels = [asyncio.run(endpoint(url, body, n, args.requests, slo_ms)) for n in args.levels]
        quality = asyncio.run(plans(url, "cockpit"))
    finally:
        launcher.stop(port)
        if database is not None:
            database.stop()
            shutil.rmtree(database.pgdata.parent, ignore_errors=True)
    result = {
        "benchmark": "LLM planner: the endpoint (TTFT, TPOT, ITL, goodput) and its plans against the local planners",
        "model": "google/gemma-3-270m (base model, packaged GGUF converted to bf16)",
        "endpoint": levels,
        "plans": quality,
        "slo_ms": slo_ms,
        "llm_turn_ms": settings.budgets.turn_ms.get("llm", 0.0),
        "llm_settings": settings.llm.model_dump(),
        **provenance(),
        "settings": {"levels": args.levels, "requests": args.requests, "prompt_text": PROMPT_TEXT},
    }
    print(write(args.out, "planner", result, markdown, figure))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
