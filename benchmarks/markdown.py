"""The markdown report of a run: encoder alone, idle turn, goodput against the encoder and the monolith, capacity at
SLO, per-level tables, per-stage latency, interleaved ratios, the open-loop sweep and the bursts.

Sections whose data a run did not measure (older results, --quick) are left out.
"""

from __future__ import annotations

from benchmarks.markdown_cells import dist_cell, level_unit, value_cell
from benchmarks.markdown_load import bursts, main_sweep, open_loop


def _encoder(result: dict) -> list[str]:
    enc = result.get("encoder_alone")
    if not enc:
        return []
    start = enc["start"]
    lines = [
        "## Encoder alone",
        "",
        f"The runtime Baton serves ({start['runtime']}; torch {start['torch_version']}), {start['threads']} "
        f"threads, its own process, `{start['encoder_path']}` with the e5 query prefix; batch 1 over "
        f"{len(start['batch1_samples_ms'])} single-intent utterances, batch {start['batch_size']} over "
        f"{len(start['batch_rounds_ms'])} rounds. Ceiling = "
        "1000 / (batch cost per sentence): the turns/s one encoder process could sustain with nothing else running.",
        "",
        f"| when | batch-1 p50 ms | p90 | batch-{start['batch_size']} ms per sentence | ceiling turns/s | load avg |",
        "|---|---|---|---|---|---|",
    ]
    for when in ("start", "end"):
        m = enc.get(when)
        if m:
            lines.append(
                f"| {when} | {dist_cell(m['batch1_ms'], 'p50')} | {dist_cell(m['batch1_ms'], 'p90')} | "
                f"{m['per_sentence_ms']} | {m['ceiling_turns_per_s']} | {m['loadavg_1m']} |"
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
            f"End ÷ start: batch-1 p50 {p['end_over_start_batch1_p50']}, "
            f"per sentence {p['end_over_start_per_sentence']}.",
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
        f"({' / '.join(' '.join(o) for o in idle['order'][:2])} …), after {spec['warmup_turns']} discarded warm-up "
        "turns each"
        + (
            f"; while a block ran, the other systems this run started were stopped (SIGSTOP; let go on "
            f"{spec.get('thaw_s', 0):g} s before their own block, whose first "
            f"{spec.get('block_warmup_turns', 0)} turn(s) "
            "were discarded), as nothing else runs when the encoder is timed alone."
            if spec.get("freeze_others")
            else "."
        ),
        "",
        "| system | turns | ok | client p50 ms | client p90 | client p99 | server total p50 | degraded "
        "| per-stage p50 ms | p50 per block |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, s in idle["systems"].items():
        stages = ", ".join(f"{k} {v:g}" for k, v in s["stages_p50_ms"].items())
        blocks = ", ".join(f"{x:g}" for x in s["block_client_p50_ms"])
        lines.append(
            f"| {name} | {s['turns']} | {s['ok']} | {dist_cell(s['client_wall_ms'], 'p50')} | "
            f"{dist_cell(s['client_wall_ms'], 'p90')} | {dist_cell(s['client_wall_ms'], 'p99')} | "
            f"{dist_cell(s['server_total_ms'], 'p50')} | {s['degraded_turns']} | {stages} | {blocks} |"
        )
    return lines + [""]


def _comparisons(result: dict) -> list[str]:
    c = result.get("comparisons")
    if not c:
        return []
    unit = level_unit(result["scenario"]["arrival"]["process"])
    lines = [
        "## Goodput vs the encoder's ceiling and the monolith",
        "",
        f"Clean goodput = HTTP 200 within {result['budget_ms']:g} ms and no degraded stage; "
        "best = the main sweep's best "
        f"level ({unit}). Encoder alone (pooled): batch-1 p50 {value_cell(c['encoder_batch1_p50_ms'])} ms, ceiling "
        f"{value_cell(c['encoder_ceiling_turns_per_s'])} turns/s; monolith: `{c['monolith'] or '–'}`.",
        "",
        "| system | idle p50 ms | idle ÷ encoder batch-1 | best clean goodput turns/s (level) | ÷ encoder ceiling "
        "| ÷ monolith |",
        "|---|---|---|---|---|---|",
    ]
    for name, s in c["systems"].items():
        lines.append(
            f"| {name} | {value_cell(s['idle_client_p50_ms'])} | {value_cell(s['idle_over_encoder_batch1'])} | "
            f"{value_cell(s['best_clean_goodput_rps'])} ({value_cell(s['best_clean_goodput_level'])}) | "
            f"{value_cell(s['clean_goodput_over_ceiling'])} | {value_cell(s['clean_goodput_over_monolith'])} |"
        )
    return lines + [""]


def _isolation(result: dict) -> list[str]:
    iso = result.get("isolation") or {}
    if iso.get("background_nice") is None and iso.get("background") is None:
        return [
            "Every system kept its CPU priority while another was measured "
            f"({iso.get('reason', 'no isolation recorded')}).",
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
        *main_sweep(result),
        *open_loop(result),
        *bursts(result),
    ]
    return "\n".join(lines) + "\n"
