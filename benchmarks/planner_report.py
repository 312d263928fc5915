"""The planner benchmark's report: the markdown tables and the figure from one result."""

from __future__ import annotations

from pathlib import Path


def markdown(result: dict) -> str:
    lines = [
        f"# LLM planner (cockpit pack, {result['model']})",
        "",
        f"Commit `{result['git_commit'][:10]}`, {result['machine']['cores']} cores, load average "
        f"{result['machine']['loadavg_1m']} at the end; the Planner's engine: vLLM (CPU) with "
        f"{result['llm_settings']['threads']} thread(s), enforce_eager {result['llm_settings']['enforce_eager']}.",
        "",
        "## The endpoint (`/v1/chat/completions`, streaming, the planner's prompt and plan schema)",
        "",
        "| concurrency | requests | TTFT p50 / p99 ms | TPOT p50 ms | ITL p50 / p99 ms | e2e p50 / p99 ms "
        f"| output tok/s | goodput req/s (e2e ≤ {result['slo_ms']:.0f} ms) |",
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
        "grounding, budget, abort), not planning quality. A GPU cluster serves an instruct model "
        "(config/serve_gpu.yaml).",
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
    levels = [str(level["concurrency"]) for level in result["endpoint"]]
    for key, label in (("ttft_ms", "TTFT p50"), ("e2e_ms", "e2e p50")):
        left.plot(levels, [level[key]["p50"] for level in result["endpoint"]], marker="o", label=label)
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
