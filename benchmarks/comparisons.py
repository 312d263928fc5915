"""Headline comparisons of one run: each system's idle latency and best clean goodput against the encoder timed
alone (its batch-1 latency and its batch throughput ceiling) and against the monolith of the same run."""

from __future__ import annotations


def clean_goodput_rps(summary: dict) -> float:
    """Turns/s answered 200 within budget with no degraded stage (older summaries: derived from their counts)."""
    if "clean_goodput_rps" in summary:
        return summary["clean_goodput_rps"]
    good = summary["good"]
    return round(summary["goodput_rps"] * (good - summary["good_degraded"]) / good, 3) if good else 0.0


def best_clean_goodput(levels: dict) -> dict | None:
    """{"rps", "level"} of the level with the highest clean goodput (the lower level on a tie); None without levels."""
    best = None
    for level, summary in sorted(((float(k), v) for k, v in levels.items()), key=lambda kv: kv[0]):
        rps = clean_goodput_rps(summary)
        if best is None or rps > best["rps"]:
            best = {"rps": rps, "level": level}
    return best


def ratio(a: float | None, b: float | None) -> float | None:
    """a / b rounded to 3 places; None when either is missing or b is not positive."""
    if a is None or b is None or b <= 0:
        return None
    return round(a / b, 3)


def _monolith(systems: dict) -> str | None:
    return next((name for name, s in systems.items() if s.get("kind") == "monolith"), None)


def comparisons(result: dict) -> dict:
    """Per system: idle client p50 ÷ encoder batch-1 p50, best clean goodput ÷ the encoder's ceiling and ÷ the
    monolith's.

    Reads result["encoder_alone"]["pooled"], result["idle"]["systems"], result["best_clean_goodput"] (the main
    sweep) and result["systems"]; a figure whose inputs were not measured is None.
    """
    pooled = (result.get("encoder_alone") or {}).get("pooled") or {}
    batch1, ceiling = pooled.get("batch1_p50_ms"), pooled.get("ceiling_turns_per_s")
    idle = (result.get("idle") or {}).get("systems", {})
    best = result.get("best_clean_goodput") or {}
    monolith = _monolith(result["systems"])
    mono_best = (best.get(monolith) or {}).get("rps") if monolith else None
    out = {}
    for name, system in result["systems"].items():
        idle_p50 = ((idle.get(name) or {}).get("client_wall_ms") or {}).get("p50")
        rps, level = (best.get(name) or {}).get("rps"), (best.get(name) or {}).get("level")
        out[name] = {
            "kind": system.get("kind"),
            "idle_client_p50_ms": idle_p50,
            "idle_over_encoder_batch1": ratio(idle_p50, batch1),
            "best_clean_goodput_rps": rps,
            "best_clean_goodput_level": level,
            "clean_goodput_over_ceiling": ratio(rps, ceiling),
            "clean_goodput_over_monolith": ratio(rps, mono_best),
        }
    return {
        "encoder_batch1_p50_ms": batch1,
        "encoder_ceiling_turns_per_s": ceiling,
        "monolith": monolith,
        "systems": out,
    }
