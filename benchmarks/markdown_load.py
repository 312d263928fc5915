"""The markdown report's load sections: capacity at SLO and the per-level tables of the main sweep, the open-loop
sweep and the bursts."""

from __future__ import annotations

from benchmarks.markdown_cells import dist_cell, level_unit, spread_cell, value_cell


def _level_table(levels: dict) -> list[str]:
    lines = [
        "| system | level | offered/s | goodput | clean goodput | goodput/s | clean goodput/s | ok/s | p50 ms | p90 "
        "| p99 | max | degraded | shed | lost | codes | client CPU | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, by_level in levels.items():
        for level, s in by_level.items():
            w = s["client_wall_ms"]
            lines.append(
                f"| {name} | {level} | {s['offered_rps']} | {s['goodput_share']:.3f} | "
                f"{s['clean_goodput_share']:.3f} | {s['goodput_rps']} | {value_cell(s.get('clean_goodput_rps'))} | "
                f"{s['throughput_rps']} | {dist_cell(w, 'p50')} | {dist_cell(w, 'p90')} | {dist_cell(w, 'p99')} | "
                f"{dist_cell(w, 'max')} | "
                f"{s['degraded_turns']} | {s['shed']} | {s['lost']} | {s['status_counts']} | "
                f"{s['client']['cpu_share']:.0%} | {s['client']['loadavg_1m']} |"
            )
    return lines


def _ratio_table(rows: list[dict]) -> list[str]:
    lines = ["| pair | client p50 | client p99 | goodput/s | pairs |", "|---|---|---|---|---|"]
    for r in rows:
        n = (r["client_p50"] or {}).get("n", 0)
        lines.append(
            f"| {r['pair']} | {spread_cell(r['client_p50'])} | {spread_cell(r['client_p99'])} | "
            f"{spread_cell(r['goodput_rps'])} | {n} |"
        )
    return lines


def main_sweep(result: dict) -> list[str]:
    unit = level_unit(result["scenario"]["arrival"]["process"])
    lines = [
        f"## Capacity at SLO (main sweep, levels in {unit})",
        "",
        "| system | capacity | per round | without degraded turns |",
        "|---|---|---|---|",
    ]
    for name, cap in result["capacity_at_slo"].items():
        rounds = ", ".join(f"{v if v is not None else '–'}" for v in result["capacity_by_round"][name].values())
        clean = result["capacity_at_slo_without_degradation"][name]
        lines.append(
            f"| {name} | {cap if cap is not None else '< lowest level'} | {rounds} | "
            f"{clean if clean is not None else '< lowest level'} |"
        )
    lines += [
        "",
        "Degraded turns (a stage missed its budget and the turn answered without it) count as good when "
        "they arrive in budget, as the SLO defines; the last column counts only turns that ran every stage.",
        "",
        "## Per load level (all rounds pooled)",
        "",
        *_level_table(result["levels"]),
        "",
        "## Per-stage latency at the capacity level (ms, p50 / p99)",
        "",
    ]
    for name, levels in result["levels"].items():
        cap = result["capacity_at_slo"][name]
        s = levels.get(str(cap)) if cap is not None else next(iter(levels.values()))
        stages = ", ".join(f"{st} {dist_cell(d, 'p50')} / {dist_cell(d, 'p99')}" for st, d in s["stages_ms"].items())
        lines.append(
            f"- **{name}** (level {cap if cap is not None else 'lowest'}): "
            f"client {dist_cell(s['client_wall_ms'], 'p50')} / "
            f"{dist_cell(s['client_wall_ms'], 'p99')}, server total {dist_cell(s['server_total_ms'], 'p50')} / "
            f"{dist_cell(s['server_total_ms'], 'p99')}; {stages}"
        )
    lines += [
        "",
        "## Interleaved ratios (median [min–max] over level × round pairs)",
        "",
        *_ratio_table(result["ratios"]),
    ]
    return lines


def open_loop(result: dict) -> list[str]:
    ol = result.get("open_loop")
    if not ol:
        return []
    process = ol["load"]["arrival"]["process"]
    caps, clean = result.get("open_loop_capacity_at_slo") or {}, result.get("open_loop_capacity_at_slo_clean") or {}
    lines = [
        "",
        f"## Open-loop sweep ({process}, levels in turns/s)",
        "",
        "| system | capacity at SLO | capacity, clean goodput |",
        "|---|---|---|",
    ]
    for name in ol["levels"]:
        lines.append(f"| {name} | {value_cell(caps.get(name))} | {value_cell(clean.get(name))} |")
    lines += ["", *_level_table(ol["levels"])]
    if result.get("open_loop_ratios"):
        lines += ["", "Interleaved ratios, open loop:", "", *_ratio_table(result["open_loop_ratios"])]
    return lines


def bursts(result: dict) -> list[str]:
    lines = []
    for b in result.get("bursts") or ([result["burst"]] if result.get("burst") else []):
        source = f", from the {b['capacity_source']} sweep" if b.get("capacity_source") else ""
        lines += [
            "",
            f"## Burst on `{b['system']}`",
            "",
            f"{b['offered_rps_target']}/s offered (target; {b['multiple']:g}× a capacity of "
            f"{b['capacity_at_slo_rps']}/s{source}) for {result['scenario']['burst']['duration_s']:g} s, "
            f"autoscaling upscale delay {b['upscale_delay_s']:g} s.",
            "",
            "| sent | offered/s | accepted (200) | accepted/s | accepted ÷ capacity | good (≤ budget) "
            "| accepted in budget | shed (503/429) | shed without Retry-After | 5xx other than 503 | lost "
            "| slowest answer ms | codes | recovery |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            f"| {b['sent']} | {b['offered_rps']} | {b['ok']} | {b['accepted_rps']} | {b['accepted_over_capacity']} | "
            f"{b['good']} | {value_cell(b.get('accepted_in_budget_share'), '.1%')} | {b['shed']} | "
            f"{b['shed_without_retry_after']} | {b['server_errors_not_503']} | {b['lost']} | {b['max_wall_ms']} | "
            f"{b['status_counts']} | {b['recovery_statuses']} |",
            "",
            f"Client CPU during the burst: {b['client']['cpu_share']:.0%} of one core."
            + (
                f" Follow-up turns not sent because their conversation's earlier turn was shed or lost: "
                f"{b['abandoned_turns']}."
                if "abandoned_turns" in b
                else ""
            ),
            *(["", f"Note: {b['note']}"] if b.get("note") else []),
        ]
    return lines
