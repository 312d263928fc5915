"""The markdown report of a run: encoder alone, idle turn, goodput against the encoder and the monolith, capacity at
SLO, per-level tables, per-stage latency, interleaved ratios, the open-loop sweep and the bursts.

Sections whose data a run did not measure (older results, --quick) are left out.
"""

from __future__ import annotations


def _d(dist: dict | None, key: str) -> str:
    return "–" if not dist else f"{dist[key]:g}"


def _v(value, fmt: str = "g") -> str:
    return "–" if value is None else format(value, fmt)


def _spread(x: dict | None) -> str:
    return "–" if not x else f"{x['median']} [{x['min']}–{x['max']}]"


def _unit(process: str) -> str:
    return "concurrent sessions" if process == "closed" else "turns/s"


def _encoder(result: dict) -> list[str]:
    enc = result.get("encoder_alone")
    if not enc:
        return []
    start = enc["start"]
    lines = [
        "## Encoder alone",
        "",
        f"sentence-transformers on {start['runtime']} {start['torch_version']}, {start['threads']} threads, its own "
        f"process, `{start['encoder_path']}` with the e5 query prefix; batch 1 over {len(start['batch1_samples_ms'])} "
        f"single-intent utterances, batch {start['batch_size']} over {len(start['batch_rounds_ms'])} rounds. Ceiling = "
        "1000 / (batch cost per sentence): the turns/s one encoder process could sustain with nothing else running.",
        "",
        f"| when | batch-1 p50 ms | p90 | batch-{start['batch_size']} ms per sentence | ceiling turns/s | load avg |",
        "|---|---|---|---|---|---|",
    ]
    for when in ("start", "end"):
        m = enc.get(when)
        if m:
            lines.append(
                f"| {when} | {_d(m['batch1_ms'], 'p50')} | {_d(m['batch1_ms'], 'p90')} | {m['per_sentence_ms']} | "
                f"{m['ceiling_turns_per_s']} | {m['loadavg_1m']} |"
            )
    p = enc["pooled"]
    lines.append(
        f"| **pooled** ({' + '.join(p['sources'])}) | **{p['batch1_p50_ms']}** | | **{p['per_sentence_ms']}** | "
        f"**{p['ceiling_turns_per_s']}** | |"
    )
    if enc.get("end_error"):
        lines += ["", f"The end measurement failed: `{enc['end_error']}`"]
    elif p.get("end_over_start_batch1_p50") is not None:
        lines += [
            "",
            f"End ÷ start: batch-1 p50 {p['end_over_start_batch1_p50']}, per sentence {p['end_over_start_per_sentence']}.",
        ]
    return lines + [""]


def _idle(result: dict) -> list[str]:
    lines = _idle_section(result.get("idle"), "Idle turn")
    for kind, section in (result.get("idle_more") or {}).items():
        lines += _idle_section(section, f"Idle turn: `{kind}`")
    return lines


def _idle_section(idle: dict | None, title: str) -> list[str]:
    if not idle:
        return []
    spec = idle["spec"]
    lines = [
        f"## {title}",
        "",
        f"Sequential `{spec['kind']}` turns, one at a time with {spec['pause_ms']:g} ms between, each from a new user "
        f"(a fresh session); {spec['rounds']} rounds × {spec['turns_per_block']} turns per system in blocks "
        f"({' / '.join(' '.join(o) for o in idle['order'][:2])} …), after {spec['warmup_turns']} discarded warm-up turns each"
        + (
            f"; while a block ran, the other systems this run started were stopped (SIGSTOP; let go on "
            f"{spec.get('thaw_s', 0):g} s before their own block, whose first {spec.get('block_warmup_turns', 0)} turn(s) "
            "were discarded), as nothing else runs when the encoder is timed alone."
            if spec.get("freeze_others")
            else "."
        ),
        "",
        "| system | turns | ok | client p50 ms | client p90 | client p99 | server total p50 | degraded | per-stage p50 ms | p50 per block |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in idle["systems"].items():
        stages = ", ".join(f"{k} {v:g}" for k, v in s["stages_p50_ms"].items())
        blocks = ", ".join(f"{x:g}" for x in s["block_client_p50_ms"])
        lines.append(
            f"| {name} | {s['turns']} | {s['ok']} | {_d(s['client_wall_ms'], 'p50')} | {_d(s['client_wall_ms'], 'p90')} | "
            f"{_d(s['client_wall_ms'], 'p99')} | {_d(s['server_total_ms'], 'p50')} | {s['degraded_turns']} | {stages} | {blocks} |"
        )
    return lines + [""]


def _comparisons(result: dict) -> list[str]:
    c = result.get("comparisons")
    if not c:
        return []
    unit = _unit(result["scenario"]["arrival"]["process"])
    lines = [
        "## Goodput vs the encoder's ceiling and the monolith",
        "",
        f"Clean goodput = HTTP 200 within {result['budget_ms']:g} ms and no degraded stage; best = the main sweep's best "
        f"level ({unit}). Encoder alone (pooled): batch-1 p50 {_v(c['encoder_batch1_p50_ms'])} ms, ceiling "
        f"{_v(c['encoder_ceiling_turns_per_s'])} turns/s; monolith: `{c['monolith'] or '–'}`.",
        "",
        "| system | idle p50 ms | idle ÷ encoder batch-1 | best clean goodput turns/s (level) | ÷ encoder ceiling | ÷ monolith |",
        "|---|---|---|---|---|---|",
    ]
    for name, s in c["systems"].items():
        lines.append(
            f"| {name} | {_v(s['idle_client_p50_ms'])} | {_v(s['idle_over_encoder_batch1'])} | "
            f"{_v(s['best_clean_goodput_rps'])} ({_v(s['best_clean_goodput_level'])}) | "
            f"{_v(s['clean_goodput_over_ceiling'])} | {_v(s['clean_goodput_over_monolith'])} |"
        )
    return lines + [""]


def _level_table(levels: dict) -> list[str]:
    lines = [
        "| system | level | offered/s | goodput | clean goodput | goodput/s | clean goodput/s | ok/s | p50 ms | p90 | p99 | max | "
        "degraded | shed | lost | codes | client CPU | load avg |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, by_level in levels.items():
        for level, s in by_level.items():
            w = s["client_wall_ms"]
            lines.append(
                f"| {name} | {level} | {s['offered_rps']} | {s['goodput_share']:.3f} | {s['clean_goodput_share']:.3f} | "
                f"{s['goodput_rps']} | {_v(s.get('clean_goodput_rps'))} | {s['throughput_rps']} | {_d(w, 'p50')} | "
                f"{_d(w, 'p90')} | {_d(w, 'p99')} | {_d(w, 'max')} | {s['degraded_turns']} | {s['shed']} | {s['lost']} | "
                f"{s['status_counts']} | {s['client']['cpu_share']:.0%} | {s['client']['loadavg_1m']} |"
            )
    return lines


def _ratio_table(rows: list[dict]) -> list[str]:
    lines = ["| pair | client p50 | client p99 | goodput/s | pairs |", "|---|---|---|---|---|"]
    for r in rows:
        n = (r["client_p50"] or {}).get("n", 0)
        lines.append(
            f"| {r['pair']} | {_spread(r['client_p50'])} | {_spread(r['client_p99'])} | {_spread(r['goodput_rps'])} | {n} |"
        )
    return lines


def _main_sweep(result: dict) -> list[str]:
    unit = _unit(result["scenario"]["arrival"]["process"])
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
        stages = ", ".join(f"{st} {_d(d, 'p50')} / {_d(d, 'p99')}" for st, d in s["stages_ms"].items())
        lines.append(
            f"- **{name}** (level {cap if cap is not None else 'lowest'}): client {_d(s['client_wall_ms'], 'p50')} / "
            f"{_d(s['client_wall_ms'], 'p99')}, server total {_d(s['server_total_ms'], 'p50')} / "
            f"{_d(s['server_total_ms'], 'p99')}; {stages}"
        )
    lines += [
        "",
        "## Interleaved ratios (median [min–max] over level × round pairs)",
        "",
        *_ratio_table(result["ratios"]),
    ]
    return lines


def _open_loop(result: dict) -> list[str]:
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
        lines.append(f"| {name} | {_v(caps.get(name))} | {_v(clean.get(name))} |")
    lines += ["", *_level_table(ol["levels"])]
    if result.get("open_loop_ratios"):
        lines += ["", "Interleaved ratios, open loop:", "", *_ratio_table(result["open_loop_ratios"])]
    return lines


def _bursts(result: dict) -> list[str]:
    lines = []
    for b in result.get("bursts") or ([result["burst"]] if result.get("burst") else []):
        source = f", from the {b['capacity_source']} sweep" if b.get("capacity_source") else ""
        lines += [
            "",
            f"## Burst on `{b['system']}`",
            "",
            f"{b['offered_rps_target']}/s offered (target; {b['multiple']:g}× a capacity of {b['capacity_at_slo_rps']}/s"
            f"{source}) for {result['scenario']['burst']['duration_s']:g} s, autoscaling upscale delay {b['upscale_delay_s']:g} s.",
            "",
            "| sent | offered/s | accepted (200) | accepted/s | accepted ÷ capacity | good (≤ budget) | accepted in budget | "
            "shed (503/429) | shed without Retry-After | 5xx other than 503 | lost | slowest answer ms | codes | recovery |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
            f"| {b['sent']} | {b['offered_rps']} | {b['ok']} | {b['accepted_rps']} | {b['accepted_over_capacity']} | "
            f"{b['good']} | {_v(b.get('accepted_in_budget_share'), '.1%')} | {b['shed']} | {b['shed_without_retry_after']} | "
            f"{b['server_errors_not_503']} | {b['lost']} | {b['max_wall_ms']} | {b['status_counts']} | {b['recovery_statuses']} |",
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


def _isolation(result: dict) -> list[str]:
    iso = result.get("isolation") or {}
    if iso.get("background_nice") is None and iso.get("background") is None:
        return [
            f"Every system kept its CPU priority while another was measured ({iso.get('reason', 'no isolation recorded')}).",
            "",
        ]
    how = (
        f"under {iso['background']} (the measured system's threads preempt theirs on waking)"
        if iso.get("background")
        else f"at nice {iso['background_nice']}"
    )
    return [
        f"While one system was measured, the others this run started ({', '.join(iso['systems'])}) waited {how}: "
        "all stay started and warm, but an idle system's housekeeping (a Baton's Serve controller, GCS, raylet and "
        "replicas: about a fifth of one core) takes CPU only when the measured one leaves it.",
        "",
    ]


def render(result: dict) -> str:
    sc, machine = result["scenario"], result["machine"]
    lines = [
        f"# Benchmark `{sc['name']}` ({result['mode']})",
        "",
        f"{sc['description'].strip()}",
        "",
        f"Pack `{result['pack']}`, commit `{result['git_commit'][:10]}`, {machine['cores']} cores, "
        f"load average {machine['loadavg_at_start'][0]} at start / {machine['loadavg_at_end'][0]} at end "
        f"({result['started_at']} → {result['finished_at']}). Arrivals: {sc['arrival']['process']}; "
        f"SLO: HTTP 200 within {result['budget_ms']:g} ms client wall time; capacity = highest level with goodput "
        f"≥ {sc['slo']['goodput_target']:.0%}. The machine is shared (see the load average per level): trust the "
        "interleaved ratios more than absolute times.",
        "",
        *_isolation(result),
        *_encoder(result),
        *_idle(result),
        *_comparisons(result),
        *_main_sweep(result),
        *_open_loop(result),
        *_bursts(result),
    ]
    return "\n".join(lines) + "\n"
