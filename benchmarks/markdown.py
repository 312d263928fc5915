"""The markdown report of a run: capacity at SLO, per-level table, per-stage latency, ratios, burst."""
from __future__ import annotations


def _d(dist: dict | None, key: str) -> str:
    return "–" if not dist else f"{dist[key]:g}"


def render(result: dict) -> str:
    sc, machine = result["scenario"], result["machine"]
    lines = [
        f"# Benchmark `{sc['name']}` ({result['mode']})", "",
        f"{sc['description'].strip()}", "",
        f"Pack `{result['pack']}`, commit `{result['git_commit'][:10]}`, {machine['cores']} cores, "
        f"load average {machine['loadavg_at_start'][0]} at start / {machine['loadavg_at_end'][0]} at end "
        f"({result['started_at']} → {result['finished_at']}). Arrivals: {sc['arrival']['process']}; "
        f"SLO: HTTP 200 within {result['budget_ms']:g} ms client wall time; capacity = highest offered level with goodput "
        f"≥ {sc['slo']['goodput_target']:.0%}. The machine is shared (see the load average per level): trust the "
        "interleaved ratios more than absolute times.", "",
        "## Capacity at SLO", "",
        "| system | capacity (turns/s) | per round | without degraded turns |", "|---|---|---|---|",
    ]
    for name, cap in result["capacity_at_slo"].items():
        rounds = ", ".join(f"{v if v is not None else '–'}" for v in result["capacity_by_round"][name].values())
        clean = result["capacity_at_slo_without_degradation"][name]
        lines.append(f"| {name} | {cap if cap is not None else '< lowest level'} | {rounds} | "
                     f"{clean if clean is not None else '< lowest level'} |")
    lines += ["", "Degraded turns (a stage missed its budget and the turn answered without it) count as good when "
              "they arrive in budget, as the SLO defines; the last column counts only turns that ran every stage."]
    lines += ["", "## Per load level (all rounds pooled)", "",
              "| system | level | offered/s | goodput | clean goodput | goodput/s | ok/s | p50 ms | p90 | p99 | max | degraded | shed | lost | codes | client CPU | load avg |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, levels in result["levels"].items():
        for level, s in levels.items():
            w = s["client_wall_ms"]
            lines.append(f"| {name} | {level} | {s['offered_rps']} | {s['goodput_share']:.3f} | {s['clean_goodput_share']:.3f} | {s['goodput_rps']} | "
                         f"{s['throughput_rps']} | {_d(w, 'p50')} | {_d(w, 'p90')} | {_d(w, 'p99')} | {_d(w, 'max')} | "
                         f"{s['degraded_turns']} | {s['shed']} | {s['lost']} | {s['status_counts']} | {s['client']['cpu_share']:.0%} | {s['client']['loadavg_1m']} |")
    lines += ["", "## Per-stage latency at the capacity level (ms, p50 / p99)", ""]
    for name, levels in result["levels"].items():
        cap = result["capacity_at_slo"][name]
        s = levels.get(str(cap)) if cap is not None else next(iter(levels.values()))
        stages = ", ".join(f"{st} {_d(d, 'p50')} / {_d(d, 'p99')}" for st, d in s["stages_ms"].items())
        lines.append(f"- **{name}** (level {cap if cap is not None else 'lowest'}): client {_d(s['client_wall_ms'], 'p50')} / "
                     f"{_d(s['client_wall_ms'], 'p99')}, server total {_d(s['server_total_ms'], 'p50')} / "
                     f"{_d(s['server_total_ms'], 'p99')}; {stages}")
    lines += ["", "## Interleaved ratios (median [min–max] over level × round pairs)", "",
              "| pair | client p50 | client p99 | goodput/s | pairs |", "|---|---|---|---|---|"]
    for r in result["ratios"]:
        def fmt(x: dict | None) -> str:
            return "–" if not x else f"{x['median']} [{x['min']}–{x['max']}]"
        n = (r["client_p50"] or {}).get("n", 0)
        lines.append(f"| {r['pair']} | {fmt(r['client_p50'])} | {fmt(r['client_p99'])} | {fmt(r['goodput_rps'])} | {n} |")
    for b in result.get("bursts") or ([result["burst"]] if result.get("burst") else []):
        lines += ["", f"## Burst on `{b['system']}`", "",
                  f"{b['offered_rps_target']}/s offered (target; {b['multiple']:g}× a capacity of {b['capacity_at_slo_rps']}/s) for "
                  f"{sc['burst']['duration_s']:g} s, autoscaling upscale delay {b['upscale_delay_s']:g} s.", "",
                  "| sent | offered/s | accepted (200) | accepted/s | accepted ÷ capacity | good (≤ budget) | shed (503/429) | "
                  "shed without Retry-After | 5xx other than 503 | lost | slowest answer ms | recovery |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|",
                  f"| {b['sent']} | {b['offered_rps']} | {b['ok']} | {b['accepted_rps']} | {b['accepted_over_capacity']} | "
                  f"{b['good']} | {b['shed']} | {b['shed_without_retry_after']} | {b['server_errors_not_503']} | {b['lost']} | "
                  f"{b['max_wall_ms']} | {b['recovery_statuses']} |", "",
                  f"Client CPU during the burst: {b['client']['cpu_share']:.0%} of one core."
                  + (f" Follow-up turns not sent because their conversation's earlier turn was shed or lost: "
                     f"{b['abandoned_turns']}." if "abandoned_turns" in b else ""),
                  *(["", f"Note: {b['note']}"] if b.get("note") else [])]
    return "\n".join(lines) + "\n"
