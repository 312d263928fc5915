"""The report of `benchmarks.two_apps`: report.md (start, idle memory, held-out turns alone and in both) and
memory.png."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.two_apps import agreement


def write_report(result: dict[str, Any], out: Path) -> None:
    failed = [r for r in result["runs"] if "error" in r]
    runs = {r["system"]: r for r in result["runs"] if "error" not in r}
    lines = [
        f"# One pack alone vs both in one cluster (commit {result['git_commit'][:8]}, {result['machine']['cores']} "
        f"cores, load {result['machine']['loadavg_1m']:.1f} at the end)",
        "",
        "`config/serve_local.yaml` as `make run` starts it (inline layout, ASR, OCR, the Planner on vLLM); `both` is "
        "`make run BATON_APPS=all`: cockpit at /cockpit, timeflow at /timeflow, ASR, OCR and the Planner deployed "
        "once. Memory: the run's processes (driver, Ray, Serve, HAProxy, replicas; not PostgreSQL) after "
        f"{result['settle_s']:.0f} s idle.",
        "",
        "| run | start to green | idle RSS | idle PSS | processes |",
        "|---|---|---|---|---|",
    ]
    for name, run in runs.items():
        lines.append(
            f"| {name} | {run['start_s']:.0f} s | {run['rss_mib'] / 1024:.2f} GiB | {run['pss_mib'] / 1024:.2f} GiB "
            f"| {run['processes']} |"
        )
    lines += ["", "Held-out turns over HTTP (each row a first turn of its own user; unstudied sets):", ""]
    lines += ["| pack | rows | alone top-1 | in both top-1 | same answer alone and in both | degraded alone / both |"]
    lines += ["|---|---|---|---|---|---|"]
    both = runs.get("both", {}).get("scores", {})
    for pack, path in result["held_out"].items():
        alone = runs.get(pack, {}).get("scores", {}).get(pack)
        shared = both.get(pack)
        if alone is None or shared is None:
            continue
        lines.append(
            f"| {pack} (`{Path(path).name}`, 1 row in {result['every']}) | {alone['rows']} | {alone['top1']:.3f} "
            f"| {shared['top1']:.3f} | {agreement(alone['answers'], shared['answers']):.3f} "
            f"| {alone['degraded_turns']} / {shared['degraded_turns']} |"
        )
    lines += ["", "Idle memory by process title (PSS MiB):", "", "| process | " + " | ".join(runs) + " |"]
    lines.append("|---|" + "---|" * len(runs))
    titles = sorted({t for r in runs.values() for t in r["by_title"]})
    for title in titles:
        cells = [f"{r['by_title'][title]['pss_mib']:.0f}" if title in r["by_title"] else "" for r in runs.values()]
        lines.append(f"| `{title}` | " + " | ".join(cells) + " |")
    lines += [f"\nRun `{r['system']}` failed (exit status {r['error']}): not measured." for r in failed]
    lines += ["", "![idle memory and start](memory.png)", ""]
    (out / "report.md").write_text("\n".join(lines), encoding="utf-8")
    plot(runs, out / "memory.png")


def plot(runs: dict[str, dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(runs)
    fig, (mem, start) = plt.subplots(1, 2, figsize=(8, 3.2))
    mem.bar(names, [runs[n]["pss_mib"] / 1024 for n in names], color="#4c72b0")
    mem.set_ylabel("idle PSS (GiB)")
    start.bar(names, [runs[n]["start_s"] for n in names], color="#dd8452")
    start.set_ylabel("start to green (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
