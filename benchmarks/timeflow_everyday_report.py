"""The TimeFlow everyday benchmark's report: the figures against their targets, the misses case by case, a bar chart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

NAMES = {
    "agent_function": "right agent + function",
    "range": "time range right",
    "title": "title = the user's words",
    "confirmation": "a write ends waiting for its confirmation",
    "converged": "a clarification answered with the missing information ends in a confirmation",
}


def figure(result: dict[str, Any], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figures = result["figures"]
    names = list(figures)
    fig, ax = plt.subplots(figsize=(7.5, 3.6))
    shares = [figures[n]["share"] for n in names]
    bars = ax.barh(
        names, shares, color=["#4c72b0" if figures[n]["share"] >= figures[n]["target"] else "#dd8452" for n in names]
    )
    for name, bar in zip(names, bars, strict=True):
        target = figures[name]["target"]
        if target:
            ax.plot([target, target], [bar.get_y(), bar.get_y() + bar.get_height()], color="black", linewidth=1.5)
        ax.text(
            min(bar.get_width(), 0.98),
            bar.get_y() + bar.get_height() / 2,
            f" {figures[name]['right']}/{figures[name]['cases']}",
            va="center",
            ha="right",
            color="white",
            fontsize=8,
        )
    ax.set(
        xlim=(0, 1),
        xlabel="share of the held-out cases (black: target)",
        title=result.get("label") or result["benchmark"],
    )
    ax.invert_yaxis()
    fig.tight_layout()
    path = out / f"{result.get('name', 'timeflow_everyday')}.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _cell(value: Any) -> str:
    if isinstance(value, list):
        return " / ".join(map(str, value))
    return "–" if value in (None, "") else str(value)


def markdown(result: dict[str, Any]) -> str:
    lines = [
        f"# {result['benchmark']} ({result['machine']['cores']} cores, commit {result['git_commit'][:8]})",
        "",
        f"{result.get('label') or ''}",
        "",
        f"Set: `{result['set']}` ({len(result['cases'])} cases, the app's clock pinned at {result['now']}); planner: "
        f"{result['planner']}; {result['degraded_cases']} case(s) still ran degraded after their retries; "
        f"{result['wall_s']} s in all.",
        "",
        "| figure | right / cases | share | target |",
        "|---|---|---|---|",
    ]
    for name, fig in result["figures"].items():
        mark = "" if fig["share"] >= fig["target"] else " (below target)"
        lines.append(
            f"| {NAMES[name]} | {fig['right']} / {fig['cases']} | **{fig['share']:.3f}**{mark} "
            f"| {fig['target'] or '–'} |"
        )
    misses = [c for c in result["cases"] if any(v is False for v in c["score"].values())]
    lines += ["", f"## Misses ({len(misses)} cases)", ""]
    if misses:
        lines += ["| case | said | wrong | expected | observed |", "|---|---|---|---|---|"]
    for case in misses:
        wrong = [k for k, v in case["score"].items() if v is False]
        seen, expect = case["observed"], case["expect"]
        observed = (
            f"{_cell(seen['agent'])}.{_cell(seen['function'])}; {_cell(seen['start'])} – {_cell(seen['end'])}"
            f"{'; deadline ' + seen['deadline'] if seen.get('deadline') else ''}; title {_cell(seen['title'])}; "
            f"asked {_cell(seen['asked'])}; statuses {_cell(case['statuses'])}"
        )
        expected = (
            f"{expect['agent']}.{expect['function']}; {_cell(expect.get('range'))}; title {_cell(expect.get('title'))}"
        )
        lines.append(f"| {case['id']} | {' → '.join(case['said'])} | {', '.join(wrong)} | {expected} | {observed} |")
    lines += [
        "",
        f"Load average at the end: {result['machine']['loadavg_1m']}. Each case ran as a new account; the setup items "
        "went through the write gate; every write was confirmed (确认).",
        "",
    ]
    return "\n".join(lines)
