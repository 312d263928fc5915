"""The planning benchmark's report: its markdown and its figure (task level right by labelled level)."""

from __future__ import annotations

from pathlib import Path

LEVELS = ("L1", "L2", "L3")


def markdown(result: dict) -> str:
    s = result["summary"]
    lines = [
        "# Planning requests: seed 000's Scheduling chain on the held-out set",
        "",
        f"Commit {result['provenance']['git_commit'][:7]}, {result['provenance']['measured_at']}; "
        f"`python -m benchmarks.timeflow_planning`, engine level over PostgreSQL, rules only (no classifier "
        f"signal), {result['ms_per_request']} ms per request.",
        "",
        "| | value | target |",
        "|---|---|---|",
        f"| requests | {s['requests']} | ≥ 30 |",
        f"| task level right | **{s['level_accuracy']:.3f}** | ≥ 0.85 |",
        f"| what is missing, exact set | {s['missing_exact']:.3f} | |",
        f"| slots proposed | {s['slots']} ({s['requests_without_slots']} requests without any) | |",
        f"| slots outside working hours | {s['slots_outside_working_hours']} | 0 |",
        f"| slots overlapping a seeded item | {s['slots_overlapping_items']} | 0 |",
        f"| slots overlapping another slot | {s['slots_overlapping_each_other']} | 0 |",
        *_engine_lines(result),
        "",
        "Confusion (rows: labelled, columns: got):",
        "",
        "| | L1 | L2 | L3 |",
        "|---|---|---|---|",
        *(f"| {a} | " + " | ".join(str(s["confusion"][a][b]) for b in LEVELS) + " |" for a in LEVELS),
        "",
        "Misses:",
        "",
        "| request | level | got | missing | got |",
        "|---|---|---|---|---|",
        *(
            f"| {r['text']} | {r['level']} | {r['got_level']} | {','.join(r['missing'])} | "
            f"{','.join(r['got_missing'])} |"
            for r in result["rows"]
            if not (r["level_right"] and r["missing_right"])
        ),
        "",
        "![accuracy by level](by_level.png)",
        "",
    ]
    return "\n".join(lines)


def _engine_lines(result: dict) -> list[str]:
    """The engine leg's rows (when it ran), and each request's turn."""
    engine = result["summary"].get("engine")
    if engine is None:
        return []
    n = result["summary"]["requests"]
    rows = [
        f"| through the turn engine (built models): handed to the chain | {engine['reached_the_chain']} of {n} | |",
        f"| task level right with the classifier's signal | {engine['level_accuracy_with_signal']:.3f} | |",
        "",
        "The engine's turn on each request (status, intent, agent) and whether the route hands it to the chain:",
        "",
        "| request | status | intent | agent | reaches the chain |",
        "|---|---|---|---|---|",
    ]
    for r in result["rows"]:
        t = r["engine"]
        rows.append(
            f"| {r['text']} | {t['status']} | {t['intent']} | {t['agent']} | {'yes' if t['reached'] else 'no'} |"
        )
    return rows


def figure(result: dict, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by = result["summary"]["by_level"]
    fig, ax = plt.subplots(figsize=(5, 3))
    shares = [by[level]["right"] / by[level]["n"] if by[level]["n"] else 0 for level in LEVELS]
    ax.bar(LEVELS, shares, color=["#7aa6c2", "#4c72b0", "#2a4d69"])
    ax.axhline(0.85, color="red", linestyle="--", linewidth=1, label="target 0.85")
    for i, level in enumerate(LEVELS):
        ax.text(i, shares[i] + 0.02, f"{by[level]['right']}/{by[level]['n']}", ha="center")
    ax.set_ylim(0, 1.1)
    ax.set_ylabel("task level right")
    ax.set_title("Held-out planning requests by labelled level")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(out / "by_level.png", dpi=110)
    plt.close(fig)
