"""`python -m benchmarks.intent_quality`: routing quality per pack on rows its models never saw.

For each shipped pack (its test split) and each pack built from rows (`--data name=rows.jsonl`, the product's DATA
path: its held-out split, scored by the models built on the training split alone), the pack is built as
`make models` builds it, then every held-out row is scored three ways: the classifier alone, fusion's top-1, and
served — a turn through the real TurnEngine on the real models in-process (the monolith path: rewrite, social,
planner and fusion decide the answered intent as they do over HTTP; the stage budgets are widened so a busy machine
measures the models, not its load). With each pack: its build times (tuning, selection, heads) and the remaining
errors grouped by (expected, answered). A shipped pack's test split was written with its training examples and
shares their phrasing; `--phrasings pack=rows.jsonl` (repeatable; default: every
`benchmarks/data/phrasings_<pack>*.jsonl`) also scores the served models on sets of utterances written apart from the
pack, the way users talk — each set reported on its own, the later sets written after the earlier ones had been
studied for errors. Writes `results.json` and `report.md` under `--out`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "results" / "intent_quality"
PHRASINGS = ROOT / "benchmarks" / "data"
BUDGET_SCALE = 20.0


def served_top1(pack, settings, artifacts, rows) -> dict:
    """Each row a first turn of its own user, through the TurnEngine as the Orchestrator runs it."""
    from deployments.artifacts import served_settings
    from deployments.in_process import InProcessModels
    from deployments.nlu import build_nlu
    from engine.plugins import PluginRegistry
    from engine.session import InMemorySessionStore
    from engine.turn import TurnEngine
    from protocol.http_chat import ChatRequest

    settings = served_settings(settings, artifacts)
    wide = settings.budgets.model_copy(
        update={
            "turn_ms": {k: v * BUDGET_SCALE for k, v in settings.budgets.turn_ms.items()},
            "stages_ms": {k: v * BUDGET_SCALE for k, v in settings.budgets.stages_ms.items()},
        }
    )
    settings = settings.model_copy(update={"budgets": wide})
    models = InProcessModels(build_nlu(settings, artifacts=artifacts))
    engine = TurnEngine(
        pack=pack, settings=settings, models=models, sessions=InMemorySessionStore(600), plugins=PluginRegistry()
    )

    async def run() -> list:
        return [await engine.chat(ChatRequest(user_id=f"quality-{n}", text=text)) for n, (text, _) in enumerate(rows)]

    try:
        answers = asyncio.run(run())
    finally:
        models.close()
    errors = Counter((gold, a.intent) for a, (_, gold) in zip(answers, rows, strict=True) if a.intent != gold)
    return {
        "top1": round(sum(a.intent == gold for a, (_, gold) in zip(answers, rows, strict=True)) / max(1, len(rows)), 4),
        "degraded_turns": sum(bool(a.timings.degraded) for a in answers),
        "statuses": dict(Counter(a.status.value for a in answers)),
        "errors": [{"expected": g, "answered": a, "rows": k} for (g, a), k in errors.most_common()],
    }


def phrasing_sets(pack: str) -> list[Path]:
    """The shipped sets of fresh phrasings for `pack`, in the order they were written."""
    return sorted(PHRASINGS.glob(f"phrasings_{pack}*.jsonl"), key=lambda p: (len(p.name), p.name))


def read_rows(path: Path) -> list[tuple[str, str]]:
    """`{"text": …, "intent": …}` per line."""
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return [(r["text"], r["intent"]) for r in rows]


def measure(name: str, data: Path | None, config_dir: Path, phrasings: list[Path] = ()) -> dict:
    from config.settings import load_settings
    from deployments import artifacts as layout
    from engine.pack import find_pack, load_pack
    from models.build import build, pack_settings, rows_to_pack
    from models.evaluate import evaluated_artifacts, held_out

    settings = load_settings(config_dir, {**os.environ, "BATON_PACK": name})
    if data is not None:
        rows_to_pack(data, name, settings)
    pack = load_pack(find_pack(name, shipped_dir=settings.packs_dir, state_dir=settings.state_dir))
    started = time.time()
    build(pack, settings)
    artifacts = evaluated_artifacts(pack, settings)
    builds = {"served": layout.read_manifest(settings.artifacts_dir(name))}
    if pack.serve_on == "all_rows":
        builds["held_out"] = layout.read_manifest(artifacts)
    offline = held_out(pack, settings)
    served = served_top1(pack, settings, artifacts, pack.test_rows())
    chosen = builds.get("held_out", builds["served"])
    fresh = [(path, served_top1(pack, settings, artifacts, read_rows(path))) for path in phrasings]
    return {
        "pack": name,
        "source": str(data) if data else "shipped",
        "intents": len(pack.intents),
        "served_on": pack.serve_on,
        "held_out_rows": offline["rows"],
        "classifier_top1": offline["classifier_top1"],
        "fusion_top1": offline["fusion_top1"],
        "served_top1": served["top1"],
        "served": served,
        "fusion_errors": offline["errors"],
        "build_s": {k: m["build_s"] for k, m in builds.items()},
        "timings": {k: m.get("timings", {}) for k, m in builds.items()},
        "rows": {k: m["train_rows"] for k, m in builds.items()},
        "selected": chosen.get("selected"),
        "cross_validation": chosen.get("selection_report"),
        "finetune": pack_settings(pack, settings).models.finetune,
        "phrasings": [
            {
                "source": str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path),
                "rows": sum(scored["statuses"].values()),
                **scored,
            }
            for path, scored in fresh
        ],
        "measured_s": round(time.time() - started, 1),
    }


def report(result: dict) -> str:
    lines = [
        "# Routing quality per pack",
        "",
        f"`python -m benchmarks.intent_quality` at commit {result['git_commit'][:8]}, "
        f"{result['machine']['cores']} cores, "
        f"load average {result['machine']['loadavg_at_start']} at the start and {result['machine']['loadavg_at_end']} "
        "at the end (the machine was shared). Every figure is top-1 on rows the scoring models never saw: a shipped "
        "pack's test split; for a pack built from rows, its held-out split scored by the models built on its training "
        "split alone (the served models then learn from every row).",
        "",
        "| pack | intents | held-out rows | classifier alone | fusion top-1 | served (turn engine) "
        "| fresh phrasings, served (rows; per set) | build time (served / held-out) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for p in result["packs"]:
        build = " / ".join(f"{p['build_s'][k]:.0f} s" for k in ("served", "held_out") if k in p["build_s"])
        phrased = " / ".join(f"{f['top1']:.3f} ({f['rows']})" for f in p.get("phrasings") or []) or "–"
        lines.append(
            f"| {p['pack']} | {p['intents']} | {p['held_out_rows']} | {p['classifier_top1']:.3f} | "
            f"{p['fusion_top1']:.3f} | {p['served_top1']:.3f} | {phrased} | {build} |"
        )
    lines += ["", "## Per pack", ""]
    for p in result["packs"]:
        lines += [
            f"### {p['pack']}",
            "",
            f"- Built from {p['rows']} rows (encoder tuned: {p['finetune']}); timings: {json.dumps(p['timings'])}.",
            f"- Chosen on held-out folds of the training rows: {json.dumps(p['selected'], ensure_ascii=False)}.",
        ]
        cv = p.get("cross_validation") or {}
        if cv:
            top1 = cv["classifier_top1"]
            tuned = f"tuned head {top1['tuned_head']:.3f}, " if top1["tuned_head"] is not None else ""
            lines.append(
                f"- Out-of-fold top-1 ({cv['folds']} folds, {cv['rows']} rows): classifier {top1['chosen']:.3f} "
                f"({tuned}refit head {top1['refit_head']:.3f}, n-gram {top1['ngram']:.3f}), "
                f"retriever {cv['retriever_top1']:.3f}, fusion {cv['fusion_top1']:.3f}."
            )
            lines.append(
                f"- Where the weighted sum disagreed with the classifier (by the classifier's score): "
                f"{json.dumps(cv['confident_disagreements'])}."
            )
        served = p["served"]
        lines.append(f"- Served: {served['degraded_turns']} degraded turns; statuses {json.dumps(served['statuses'])}.")
        errors = "; ".join(f"{e['expected']} → {e['answered']} ×{e['rows']}" for e in served["errors"][:12]) or "none"
        lines.append(f"- Remaining served errors (expected → answered): {errors}.")
        for fresh in p.get("phrasings") or []:
            errors = (
                "; ".join(f"{e['expected']} → {e['answered']} ×{e['rows']}" for e in fresh["errors"][:16]) or "none"
            )
            lines.append(
                f"- Fresh phrasings (`{fresh['source']}`, {fresh['rows']} rows): served top-1 {fresh['top1']:.3f}; "
                f"errors: {errors}."
            )
        lines.append("")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.intent_quality", description=__doc__.splitlines()[0])
    parser.add_argument("--pack", action="append", default=None, help="a shipped pack (default: cockpit and timeflow)")
    parser.add_argument("--data", action="append", default=[], metavar="NAME=ROWS.jsonl", help="a pack built from rows")
    parser.add_argument(
        "--phrasings",
        action="append",
        default=[],
        metavar="PACK=ROWS.jsonl",
        help="utterances written apart from a shipped pack (default: benchmarks/data/phrasings_<pack>.jsonl)",
    )
    parser.add_argument("--config-dir", type=Path, default=ROOT / "config")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    started = {"loadavg": [round(x, 2) for x in os.getloadavg()], "at": time.time()}
    phrasings: dict[str, list[Path]] = {}
    for name, _, path in (spec.partition("=") for spec in args.phrasings):
        phrasings.setdefault(name, []).append(Path(path))
    shipped = args.pack or ["cockpit", "timeflow"]
    packs = [measure(name, None, args.config_dir, phrasings.get(name, phrasing_sets(name))) for name in shipped]
    for spec in args.data:
        name, _, path = spec.partition("=")
        packs.append(measure(name, Path(path), args.config_dir))
    result = {
        "packs": packs,
        "machine": {
            "cores": os.cpu_count(),
            "platform": platform.platform(),
            "loadavg_at_start": started["loadavg"],
            "loadavg_at_end": [round(x, 2) for x in os.getloadavg()],
        },
        "git_commit": subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip(),
        "started_at": started["at"],
        "finished_at": time.time(),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    (args.out / "report.md").write_text(report(result), encoding="utf-8")
    print(report(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
