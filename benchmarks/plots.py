"""PNG figures of a run (matplotlib, Agg): latency CDF per stage, latency and goodput vs load (main and open-loop
sweeps), burst timeline, idle latency and clean goodput against the encoder alone."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (the backend must be chosen first)


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _samples(raw: Path, prefix: str) -> list[dict]:
    rows = []
    for path in sorted(raw.glob(f"{prefix}*.jsonl")):
        rows += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    return [r for r in rows if not r["warmup"] and r["status"] == 200]


def _cdf(ax, values: list[float], label: str) -> None:
    if not values:
        return
    ordered = sorted(max(v, FLOOR_MS) for v in values)
    ax.plot(ordered, [(i + 1) / len(ordered) for i in range(len(ordered))], label=label)


FLOOR_MS = 0.005  # sub-microsecond stages (keyword, fusion) are drawn at this floor on the log axis


def stage_cdf(result: dict, raw: Path, out: Path) -> Path:
    """One panel per system, all at one level (the first system's capacity, else the lowest): wall, total, stages."""
    names = list(result["levels"])
    cap = result["capacity_at_slo"][names[0]]
    level = cap if cap is not None else min(float(x) for x in result["levels"][names[0]])
    fig, axes = plt.subplots(1, len(names), figsize=(5.5 * len(names), 4.2), squeeze=False)
    for ax, name in zip(axes[0], names, strict=True):
        rows = _samples(raw, f"{name}-{level:g}-")
        _cdf(ax, [r["wall_ms"] for r in rows], "client wall")
        _cdf(ax, [r["server_total_ms"] for r in rows if r["server_total_ms"] is not None], "server total")
        for stage in sorted({s for r in rows for s in r["stages"]}):
            _cdf(ax, [r["stages"][stage] for r in rows if stage in r["stages"]], stage)
        ax.axvline(result["budget_ms"], color="grey", linestyle=":", label="budget")
        ax.set_xscale("log")
        ax.set_xlim(left=FLOOR_MS)
        ax.set(title=f"{name} at {level:g} turns/s", xlabel="ms", ylabel="share of turns ≤ x")
        ax.legend(fontsize=7)
    return _save(fig, out / "latency_cdf.png")


def load_curves(
    result: dict, out: Path, *, levels: dict | None = None, process: str | None = None, name: str = "load_curves.png"
) -> Path:
    """Client p50/p99 and goodput share per level (the main sweep unless `levels` is given)."""
    process = process or result["scenario"]["arrival"]["process"]
    xlabel = "concurrent sessions (closed loop)" if process == "closed" else "offered load (turns/s)"
    fig, (lat, good) = plt.subplots(1, 2, figsize=(11, 4))
    for system, by_level in (levels or result["levels"]).items():
        xs = [float(x) for x in by_level]
        for key, style in (("p50", "-o"), ("p99", "--x")):
            ys = [(s["client_wall_ms"] or {}).get(key, float("nan")) for s in by_level.values()]
            lat.plot(xs, ys, style, label=f"{system} {key}")
        good.plot(xs, [s["goodput_share"] for s in by_level.values()], "-o", label=system)
    lat.axhline(result["budget_ms"], color="grey", linestyle=":", label="budget")
    lat.set(xlabel=xlabel, ylabel="client wall ms", title=f"Latency vs load ({process})", yscale="log")
    good.axhline(result["scenario"]["slo"]["goodput_target"], color="grey", linestyle=":", label="target")
    good.set(xlabel=xlabel, ylabel="goodput share", title=f"Goodput vs load ({process})", ylim=(0, 1.05))
    lat.legend(fontsize=7)
    good.legend(fontsize=7)
    return _save(fig, out / name)


def burst_timeline(result: dict, out: Path) -> Path | None:
    bursts = result.get("bursts") or ([result["burst"]] if result.get("burst") else [])
    if not bursts:
        return None
    fig, axes = plt.subplots(len(bursts), 1, figsize=(8, 3.5 * len(bursts)), squeeze=False)
    for ax, burst in zip(axes[:, 0], bursts, strict=True):
        t = [p["t"] for p in burst["timeline"]]
        for key in ("sent", "accepted", "shed"):
            ax.plot(t, [p.get(key, 0) for p in burst["timeline"]], label=key)
        if burst["capacity_at_slo_rps"]:
            ax.axhline(burst["capacity_at_slo_rps"], color="grey", linestyle=":", label="capacity at SLO")
        ax.set(
            xlabel="s since burst start (by send time)", ylabel="turns per second", title=f"Burst on {burst['system']}"
        )
        ax.legend(fontsize=8)
    return _save(fig, out / "burst.png")


def idle_and_goodput(result: dict, out: Path) -> Path | None:
    """Idle client p50 per system against the encoder's batch-1 p50; best clean goodput against its ceiling."""
    comparisons = result.get("comparisons")
    if not comparisons or not (result.get("idle") or result.get("encoder_alone")):
        return None
    systems = comparisons["systems"]
    names = list(systems)
    fig, (idle, good) = plt.subplots(1, 2, figsize=(11, 4))
    idle.bar_label(
        idle.bar(names, [systems[n]["idle_client_p50_ms"] or 0 for n in names], color="tab:blue"), fmt="%.1f"
    )
    if comparisons["encoder_batch1_p50_ms"]:
        idle.axhline(
            comparisons["encoder_batch1_p50_ms"], color="tab:red", linestyle="--", label="encoder alone, batch-1 p50"
        )
    idle.set(ylabel="client wall p50 ms", title="Idle turn")
    good.bar_label(
        good.bar(names, [systems[n]["best_clean_goodput_rps"] or 0 for n in names], color="tab:green"), fmt="%.1f"
    )
    if comparisons["encoder_ceiling_turns_per_s"]:
        good.axhline(
            comparisons["encoder_ceiling_turns_per_s"],
            color="tab:red",
            linestyle="--",
            label="encoder alone, batch ceiling",
        )
    good.set(ylabel="turns/s", title="Best clean goodput (main sweep)")
    for ax in (idle, good):
        ax.tick_params(axis="x", labelrotation=20)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=8)
    return _save(fig, out / "idle_and_goodput.png")


def write_all(result: dict, out: Path) -> list[Path]:
    paths = [
        stage_cdf(result, out / "raw", out),
        load_curves(result, out),
        burst_timeline(result, out),
        idle_and_goodput(result, out),
    ]
    if result.get("open_loop"):
        ol = result["open_loop"]
        paths.append(
            load_curves(
                result, out, levels=ol["levels"], process=ol["load"]["arrival"]["process"], name="open_loop_curves.png"
            )
        )
    return [p for p in paths if p]


def figure_names(result: dict) -> list[str]:
    """The files write_all draws for this result."""
    names = ["latency_cdf.png", "load_curves.png"]
    if result.get("bursts") or result.get("burst"):
        names.append("burst.png")
    if result.get("comparisons") and (result.get("idle") or result.get("encoder_alone")):
        names.append("idle_and_goodput.png")
    if result.get("open_loop"):
        names.append("open_loop_curves.png")
    return names
