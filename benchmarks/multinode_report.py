"""The multi-node run's figures: per phase what became of the turns sent in it, the recovery of each fault, and a
timeline of every turn around the two faults."""

from __future__ import annotations

from pathlib import Path

from benchmarks.driver import LOST, Sample
from benchmarks.stats import distribution

PHASES = ("steady", "replica_kill", "after_replica_kill", "node_loss", "after_node_loss")
COUNTS = ("sent", "answered", "degraded", "over_budget", "shed", "other_5xx", "client_4xx", "lost")


def outcome(sample: Sample) -> str:
    """ok / degraded (answered, some stage degraded) / shed (503 with Retry-After) / other_5xx / client_4xx / lost."""
    if sample.status == LOST:
        return "lost"
    if sample.status == 200:
        return "degraded" if sample.degraded else "ok"
    if sample.status == 503 and sample.retry_after is not None:
        return "shed"
    return "other_5xx" if sample.status >= 500 else "client_4xx"


def summarize(samples: list[tuple[str, Sample]], budget_ms: float) -> dict[str, dict]:
    """Per phase (in order) the counts and the client wall time of the answered turns; `total` over all phases."""
    out = {}
    for phase in (*PHASES, "total"):
        mine = [s for p, s in samples if p == phase or phase == "total"]
        kinds = [outcome(s) for s in mine]
        answered = [s for s in mine if s.status == 200]
        out[phase] = {
            "sent": len(mine),
            "answered": len(answered),
            "degraded": kinds.count("degraded"),
            "over_budget": sum(1 for s in answered if (s.server_total_ms or 0.0) > budget_ms),
            "shed": kinds.count("shed"),
            "other_5xx": kinds.count("other_5xx"),
            "client_4xx": kinds.count("client_4xx"),
            "lost": kinds.count("lost"),
            "wall_ms": distribution([s.wall_ms for s in answered]),
            "server_ms": distribution([s.server_total_ms for s in answered if s.server_total_ms is not None]),
        }
    return out


def _ms(phase: dict, key: str) -> str:
    dist = phase["wall_ms"]
    return f"{dist[key]:.0f}" if dist else "–"


def markdown(result: dict) -> str:
    phases, faults = result["phases"], result["faults"]
    total = phases["total"]
    lines = [
        f"# {result['benchmark']}",
        "",
        f"`python -m benchmarks.multinode` — {result['config']}, commit {result['git_commit'][:7]}, "
        f"{result['measured_at']}, {result['machine']['cores']} cores, 1-minute load average "
        f"{result['machine'].get('loadavg_1m_start', '?')} at the start and {result['machine']['loadavg_1m']} "
        "at the end "
        f"(other work shares this machine).",
        "",
        "## Figures",
        "",
        "| | replica killed | worker node lost |",
        "|---|---|---|",
    ]
    by = {f["phase"]: f for f in faults}
    kill, loss = by.get("replica_kill", {}), by.get("node_loss", {})

    def seconds(fault: dict) -> str:
        return "not within the wait" if fault.get("recovered_s") is None else f"{fault['recovered_s']:.1f} s"

    lines += [
        f"| seconds to full health | {seconds(kill)} | {seconds(loss)} |",
        f"| turns sent during recovery | {phases['replica_kill']['sent']} | {phases['node_loss']['sent']} |",
        f"| answered / degraded | {phases['replica_kill']['answered']} / {phases['replica_kill']['degraded']} | "
        f"{phases['node_loss']['answered']} / {phases['node_loss']['degraded']} |",
        f"| lost (no HTTP answer) | {phases['replica_kill']['lost']} | {phases['node_loss']['lost']} |",
        f"| 5xx other than a shed 503 with Retry-After | {phases['replica_kill']['other_5xx']} | "
        f"{phases['node_loss']['other_5xx']} |",
        f"| client p50 / p99 during recovery (ms) | {_ms(phases['replica_kill'], 'p50')} / "
        f"{_ms(phases['replica_kill'], 'p99')} | {_ms(phases['node_loss'], 'p50')} / "
        f"{_ms(phases['node_loss'], 'p99')} |",
        "",
        f"Whole run: {total['sent']} turns sent at {result['settings']['rate']:g}/s, **{total['lost']} lost**, "
        f"**{total['other_5xx']} non-shed 5xx**, {total['shed']} shed (503 + Retry-After), "
        f"{total['degraded']} degraded, "
        f"{total['over_budget']} over the {result['budget_ms']:g} ms budget (server time).",
        "",
        "## Per phase",
        "",
        "| phase | sent | answered | degraded | over budget | shed | other 5xx | 4xx | lost | p50 ms | p99 ms "
        "| max ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in PHASES:
        p = phases[name]
        lines.append(
            f"| {name} | "
            + " | ".join(str(p[k]) for k in COUNTS)
            + f" | {_ms(p, 'p50')} | {_ms(p, 'p99')} | {_ms(p, 'max')} |"
        )
    lines += ["", "## Placement", "", f"Before: {_where(result['placement_before'])}."]
    for fault in faults:
        lines.append(f"After {fault['phase'].replace('_', ' ')} ({fault['what']}): {_where(fault['placement_after'])}.")
    s = result["settings"]
    lines += [
        "",
        f"Client wall time over HTTP on this machine; a phase holds the turns *sent* in it (a recovery phase runs from "
        f"the fault to full health: every deployment back to its replica count on live nodes and /health green). "
        f"Ray declares a node dead after {s['node_death_s']:g} s without heartbeats; each node has "
        f"{s['cpus_per_node']} logical CPUs. Start to first green /health: {result['startup_s']} s. Memory of the "
        f"cluster, PostgreSQL and the driver: {result['memory_mb']['after_start']:.0f} MB after start, "
        f"{result['memory_mb']['peak']:.0f} MB at most.",
        "",
    ]
    return "\n".join(lines)


def _where(placement: dict[str, list[str]]) -> str:
    return "; ".join(f"{name} on {', '.join(nodes) or 'no node'}" for name, nodes in placement.items())


COLORS = {
    "ok": "tab:green",
    "degraded": "tab:orange",
    "shed": "tab:purple",
    "other_5xx": "tab:red",
    "client_4xx": "tab:brown",
    "lost": "black",
}


def figure(result: dict, samples: list[tuple[str, Sample]], out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(12.5, 4.5))
    for kind, color in COLORS.items():
        mine = [s for _, s in samples if outcome(s) == kind]
        if mine:
            ax.scatter(
                [s.t_send for s in mine],
                [max(s.wall_ms, 1.0) for s in mine],
                s=8,
                color=color,
                label=f"{kind} ({len(mine)})",
            )
    for fault in result["faults"]:
        end = fault["at_s"] + (fault["recovered_s"] or 0.0)
        ax.axvspan(fault["at_s"], end, color="tab:gray", alpha=0.2)
        ax.axvline(fault["at_s"], color="tab:red", linestyle="--", linewidth=1)
        ax.text(
            fault["at_s"],
            ax.get_ylim()[1] if ax.has_data() else 1,
            f" {fault['phase'].replace('_', ' ')}",
            va="top",
            fontsize=8,
            color="tab:red",
        )
    ax.axhline(result["budget_ms"], color="tab:blue", linewidth=0.8, label=f"turn budget {result['budget_ms']:g} ms")
    ax.set_yscale("log")
    ax.set_xlabel("time since the load started (s); grey: from the fault to full health")
    ax.set_ylabel("client wall time (ms)")
    ax.set_title("Turns through a killed model replica and a lost worker node (head + 2 workers)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
    path = out / "multinode.png"
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
