"""The WebSocket conversation benchmark's report: the markdown tables and the figure from one result."""

from __future__ import annotations

from pathlib import Path


def figure(result: dict, out: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    loops = result["closed_loop"]
    kinds = ["dialogue.decision", "write.confirmation_required", "write.applied", "execution.result"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for kind in kinds:
        xs = [loop["connections"] for loop in loops if kind in loop["events_ms"]]
        left.plot(
            xs,
            [loop["events_ms"][kind]["p50"] for loop in loops if kind in loop["events_ms"]],
            marker="o",
            label=f"{kind} p50",
        )
        left.plot(
            xs,
            [loop["events_ms"][kind]["p99"] for loop in loops if kind in loop["events_ms"]],
            linestyle=":",
            label=f"{kind} p99",
        )
    left.axhline(result["budget_ms"], color="grey", linestyle="--", label="text turn budget")
    left.set(xlabel="concurrent connections", ylabel="ms from frame sent", title="event latency", yscale="log")
    left.legend(fontsize=7)
    right.plot([loop["connections"] for loop in loops], [loop["frames_per_s"] for loop in loops], marker="o")
    right.set(xlabel="concurrent connections", ylabel="frames answered / s", title="throughput")
    fig.tight_layout()
    path = out / "conversation_ws.png"
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def markdown(result: dict) -> str:
    idle_r = result["idle"]
    lines = [
        f"# WebSocket conversation ({result['machine']['cores']} cores, commit {result['git_commit'][:8]})",
        "",
        "Idle, one at a time, the same sentence (a schedule to create):",
        "",
        "| path | event | p50 ms | p99 ms | n |",
        "|---|---|---|---|---|",
        f"| HTTP /api/v1/agent/chat | reply (perception only) | {idle_r['http_chat_ms']['p50']} | "
        f"{idle_r['http_chat_ms']['p99']} | {idle_r['http_chat_ms']['n']} |",
    ]
    for kind, d in idle_r["ws_events_ms"].items():
        lines.append(f"| WebSocket dialogue.input | {kind} | {d['p50']} | {d['p99']} | {d['n']} |")
    lines += [
        "",
        f"WebSocket decision / HTTP reply, p50: **{result['ratios']['ws_decision_over_http_p50']}**; the confirmation "
        f"(execution and the write request committed) / HTTP reply: "
        f"**{result['ratios']['ws_confirmation_over_http_p50']}**.",
        "",
        "Closed loop, each connection its own user repeating create → confirm → query; a shed frame "
        "(`overloaded`, `retry_after_s`) is sent again after the pause it names and counted under *shed*; "
        "its own time is in the `dialogue.error` row of the JSON:",
        "",
        "| connections | frames/s | shed | errors | decision p50/p99 | confirmation p50/p99 | applied p50/p99 "
        "| query result p50/p99 |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for loop in result["closed_loop"]:
        ev = loop["events_ms"]
        lines.append(
            f"| {loop['connections']} | {loop['frames_per_s']} | {loop.get('shed', 0)} | {loop['errors']} | "
            f"{_cell(ev, 'dialogue.decision')} | {_cell(ev, 'write.confirmation_required')} | "
            f"{_cell(ev, 'write.applied')} | {_cell(ev, 'execution.result')} |"
        )
    lines += [
        "",
        f"Latency is client wall time from the frame sent to the event received, over loopback. Database: "
        f"{result['database']}. Load average at the end: {result['machine']['loadavg_1m']}.",
        "",
    ]
    return "\n".join(lines)


def _cell(events: dict, kind: str) -> str:
    return f"{events[kind]['p50']} / {events[kind]['p99']}" if kind in events else "–"
