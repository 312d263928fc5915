"""`python -m benchmarks [scenario.yaml …]`: load-test Baton and its baselines over HTTP and write the results.

By default the harness starts every system of the scenario itself (Baton through the launcher, the
monolith through `python -m benchmarks.monolith`) and stops them afterwards; `--url NAME=URL` targets a
system that is already running instead (only the named systems are then measured).
"""

from __future__ import annotations

import argparse
import json
import signal
from pathlib import Path

from benchmarks.report import derive, non_finite
from benchmarks.scenario import load_scenario, overlap_with_test_split
from benchmarks.schema import Result
from benchmarks.systems import ROOT

SCENARIOS = ROOT / "benchmarks" / "scenarios"
RESULTS = ROOT / "benchmarks" / "results"


def _pack_test_texts(pack_name: str) -> set[str]:
    from config.settings import load_settings
    from engine.pack import find_pack, load_pack

    settings = load_settings(ROOT / "config", {"BATON_PACK": pack_name})
    pack = load_pack(find_pack(pack_name, shipped_dir=settings.packs_dir, state_dir=settings.state_dir))
    return {text for text, _ in pack.test_rows()}


def run_scenario(
    path: Path,
    *,
    out: Path | None = None,
    urls: dict[str, str] | None = None,
    quick: bool = False,
    monolith_port: int | None = None,
) -> tuple[dict, Path]:
    """Run one scenario file; returns the result and the folder it was written to."""
    from benchmarks.runner import Runner

    scenario, mix = load_scenario(path)
    leaked = overlap_with_test_split(mix, _pack_test_texts(scenario.pack))
    if leaked:
        raise ValueError(f"{scenario.mix} uses utterances from the pack's test split: {leaked[:5]}")
    out = out or RESULTS / (f"{scenario.name}-quick" if quick else scenario.name)
    out.mkdir(parents=True, exist_ok=True)
    result = Runner(scenario, mix, out=out, urls=urls or {}, quick=quick, monolith_port=monolith_port).run()
    bad = non_finite(result)
    if bad:
        raise ValueError(f"non-finite numbers in the report: {bad[:5]}")
    from benchmarks.plots import figure_names

    result["figures"] = figure_names(result)
    Result.model_validate(result)
    # the numbers are written first: a figure that fails to draw can be redrawn with --render
    (out / "results.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    render(out)
    return result, out


def render(out: Path) -> None:
    """(Re)write report.md and the PNGs of a results folder from its results.json and raw samples."""
    from benchmarks import markdown, plots

    result = json.loads((out / "results.json").read_text(encoding="utf-8"))
    derived = derive(result)
    if any(result.get(k) != v for k, v in derived.items()):
        result.update(derived)  # summaries written by an older definition of capacity are re-derived, not re-measured
        (out / "results.json").write_text(json.dumps(result, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    plots.write_all(result, out)
    (out / "report.md").write_text(markdown.render(result), encoding="utf-8")


def _url(value: str) -> tuple[str, str]:
    name, sep, url = value.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError("expected NAME=URL, e.g. baton=http://127.0.0.1:8000")
    return name, url


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", type=Path, default=[SCENARIOS / "default.yaml"])
    parser.add_argument("--quick", action="store_true", help="one short level per system (the scenario's `quick` load)")
    parser.add_argument(
        "--url",
        action="append",
        type=_url,
        default=[],
        metavar="NAME=URL",
        help="measure an already running system instead of starting it",
    )
    parser.add_argument("--out", type=Path, default=None, help="results folder (default benchmarks/results/<name>)")
    parser.add_argument(
        "--monolith-port",
        type=int,
        default=None,
        help="port for the monolith the harness starts (default: a free one; run by hand it listens on 8001)",
    )
    parser.add_argument(
        "--render", type=Path, default=None, metavar="DIR", help="only redraw report.md and figures of DIR"
    )
    args = parser.parse_args(argv)
    if args.render:
        render(args.render)
        return 0
    # SIGTERM stops the run like Ctrl-C, so the systems it started are shut down rather than orphaned
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    if args.out and len(args.scenarios) > 1:
        parser.error("--out takes one scenario")
    for path in args.scenarios:
        _, out = run_scenario(
            path, out=args.out, urls=dict(args.url), quick=args.quick, monolith_port=args.monolith_port
        )
        print((out / "report.md").read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
