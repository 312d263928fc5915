"""A whole run against fake systems (no Ray, no torch): every phase lands in a results.json the schema accepts."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from benchmarks import markdown, plots, sweep
from benchmarks import runner as runner_module
from benchmarks.burst import burst_base
from benchmarks.report import non_finite
from benchmarks.runner import Runner
from benchmarks.scenario import Mix, Scenario
from benchmarks.schema import Result
from benchmarks.stats import distribution

SCENARIOS = Path(__file__).resolve().parents[2] / "benchmarks" / "scenarios"


class _Turn(BaseHTTPRequestHandler):
    stage_ms = 5.0

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.dumps(
            {
                "session_id": "s1",
                "status": "completed",
                "timings": {
                    "stages": {"encoder": self.stage_ms, "keyword": 0.1},
                    "total_ms": self.stage_ms + 1,
                    "budget_ms": 600,
                    "degraded": [],
                },
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def fake_systems():
    servers = {}
    for name, stage in (("baton", 4.0), ("mono", 2.0)):
        handler = type(f"Turn_{name}", (_Turn,), {"stage_ms": stage})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers[name] = server
    yield {name: f"http://127.0.0.1:{s.server_address[1]}" for name, s in servers.items()}
    for server in servers.values():
        server.shutdown()
        server.server_close()


def _encoder(**_) -> dict:
    single, rounds = [8.0, 9.0, 10.0], [256.0, 320.0, 384.0]
    return {
        "runtime": "torch",
        "threads": 2,
        "torch_version": "fake",
        "encoder_path": "enc",
        "texts": 3,
        "load_s": 0.1,
        "batch1_ms": distribution(single),
        "batch1_samples_ms": single,
        "batch_size": 32,
        "batch_rounds_ms": rounds,
        "per_sentence_ms": 10.0,
        "ceiling_turns_per_s": 100.0,
        "loadavg_1m": 0.5,
        "measured_at": "t",
    }


def _scenario() -> Scenario:
    short = {"ramp_up_s": 0, "warmup_s": 0.2, "duration_s": 0.6}
    return Scenario.model_validate(
        {
            "name": "fake",
            "mix": "cockpit_mix.yaml",
            "arrival": {"process": "closed"},
            "load": {"levels": [1, 2], "repeats": 2, **short},
            "open_loop": {"levels": [5], "arrival": {"process": "poisson"}, **short},
            "idle": {"rounds": 2, "turns_per_block": 3, "warmup_turns": 1, "pause_ms": 0},
            "idle_more": [
                {
                    "kind": "multi_intent",
                    "rounds": 2,
                    "turns_per_block": 2,
                    "warmup_turns": 0,
                    "pause_ms": 0,
                    "settle_s": 0,
                }
            ],
            "encoder_alone": {},
            "slo": {"budget_ms": 600},
            "systems": [{"name": "baton", "kind": "baton"}, {"name": "mono", "kind": "monolith"}],
            "burst": {
                "systems": ["baton"],
                "capacity_multiple": 2,
                "duration_s": 0.6,
                "upscale_delay_s": 1,
                "cooldown_s": 0,
                "recovery_turns": 2,
            },
        }
    )


def test_a_full_run_writes_every_phase(fake_systems, tmp_path, monkeypatch):
    monkeypatch.setattr(sweep, "SETTLE_S", 0.0)
    calls = []
    monkeypatch.setattr(
        runner_module.encoder_alone, "measure_in_subprocess", lambda texts, **kw: calls.append(texts) or _encoder()
    )
    mix = Mix.model_validate(yaml.safe_load((SCENARIOS / "cockpit_mix.yaml").read_text(encoding="utf-8")))
    result = Runner(_scenario(), mix, out=tmp_path, urls=fake_systems, quick=False, monolith_port=None).run()

    assert non_finite(result) == []
    report = Result.model_validate(result)
    assert len(calls) == 2 and calls[0] == [c[0].text for c in mix.kinds["single_intent"].conversations]
    assert report.encoder_alone.pooled.ceiling_turns_per_s == 100.0 and report.encoder_alone.end is not None
    assert report.idle.order == [["baton", "mono"], ["mono", "baton"]]
    assert report.idle.systems["baton"].turns == 6 and report.idle.systems["baton"].stages_p50_ms["encoder"] == 4.0
    assert report.idle_more["multi_intent"].systems["mono"].turns == 4
    assert [(r.system, r.level, r.round) for r in report.runs][:4] == [
        ("baton", 1, 0),
        ("mono", 1, 0),
        ("mono", 1, 1),
        ("baton", 1, 1),
    ]
    assert set(report.levels["baton"]) == {"1.0", "2.0"}
    assert report.open_loop and set(report.open_loop.levels["mono"]) == {"5.0"}
    assert report.open_loop_capacity_at_slo_clean == {"baton": 5.0, "mono": 5.0}
    assert report.best_clean_goodput["baton"].rps > 0
    (burst,) = report.bursts
    assert burst.capacity_source == "open_loop" and burst.offered_rps_target == 10.0
    assert burst.accepted_in_budget_share == 1.0 and burst.recovery_statuses == {"200": 2}
    cmp = report.comparisons
    assert cmp.monolith == "mono" and cmp.systems["mono"].clean_goodput_over_monolith == 1.0
    assert cmp.systems["baton"].idle_over_encoder_batch1 == pytest.approx(
        report.idle.systems["baton"].client_wall_ms.p50 / 9.0, abs=1e-3
    )
    assert list((tmp_path / "raw").glob("idle-multi_intent-mono.jsonl"))
    assert list((tmp_path / "raw").glob("idle-baton.jsonl")) and list((tmp_path / "raw").glob("open-mono-5-0.jsonl"))

    text = markdown.render(result)
    for section in (
        "## Encoder alone",
        "## Idle turn",
        "## Idle turn: `multi_intent`",
        "## Goodput vs the encoder's ceiling and the monolith",
        "## Capacity at SLO (main sweep, levels in concurrent sessions)",
        "## Open-loop sweep (poisson",
        "## Burst on `baton`",
        "accepted in budget",
    ):
        assert section in text, section
    drawn = {p.name for p in plots.write_all(result, tmp_path)}
    assert drawn == set(plots.figure_names(result)) >= {"idle_and_goodput.png", "open_loop_curves.png", "burst.png"}


def test_the_quick_mode_skips_every_other_phase(fake_systems, tmp_path, monkeypatch):
    monkeypatch.setattr(sweep, "SETTLE_S", 0.0)
    monkeypatch.setattr(
        runner_module.encoder_alone, "measure_in_subprocess", lambda *a, **k: pytest.fail("not in --quick")
    )
    raw = _scenario().model_dump(mode="json")
    raw["quick"] = {"levels": [1], "ramp_up_s": 0, "warmup_s": 0.1, "duration_s": 0.3}
    mix = Mix.model_validate(yaml.safe_load((SCENARIOS / "cockpit_mix.yaml").read_text(encoding="utf-8")))
    result = Runner(
        Scenario.model_validate(raw),
        mix,
        out=tmp_path,
        urls={"baton": fake_systems["baton"]},
        quick=True,
        monolith_port=None,
    ).run()
    report = Result.model_validate(result)
    assert report.idle is None and report.open_loop is None and report.encoder_alone is None and report.bursts == []
    assert list(report.levels) == ["baton"] and report.comparisons.monolith is None


def test_burst_base_prefers_the_open_loop_then_an_open_main_sweep():
    sc = _scenario()
    main = {"baton": {1.0: {"goodput_share": 1.0}}}
    assert burst_base(sc, "baton", main, {"baton": {4.0: {"goodput_share": 1.0}, 8.0: {"goodput_share": 0.5}}}) == (
        4.0,
        4.0,
        "open_loop",
    )
    assert burst_base(sc, "baton", main, {"baton": {4.0: {"goodput_share": 0.5}}}) == (None, 4.0, "open_loop")
    assert burst_base(sc, "baton", main, None) == (None, None, "none")
    open_main = Scenario.model_validate(
        {**sc.model_dump(mode="json"), "arrival": {"process": "poisson"}, "open_loop": None}
    )
    assert burst_base(open_main, "baton", {"baton": {6.0: {"goodput_share": 0.995}}}, None) == (6.0, 6.0, "main")
