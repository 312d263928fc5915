"""Scenario files validate; bad ones fail with a message; the shipped mix stays out of the pack's test split."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from benchmarks.conversations import ConversationSource, mean_turns
from benchmarks.scenario import Scenario, kind_texts, load_scenario, overlap_with_test_split
from benchmarks.sweep import sweep_seconds
from benchmarks.systems import CONFIG_DIR, deployment_names, model_deployments, serve_config_path, with_settings

SCENARIOS = Path(__file__).resolve().parents[2] / "benchmarks" / "scenarios"


SHIPPED = sorted(p.name for p in SCENARIOS.glob("*.yaml") if not p.name.endswith("_mix.yaml"))


def test_every_scenario_file_is_checked():
    assert {"default.yaml", "sweep.yaml", "closed.yaml", "burst.yaml", "encode_once.yaml"} <= set(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_scenarios_validate_with_their_overrides(name, tmp_path):
    scenario, mix = load_scenario(SCENARIOS / name)
    assert scenario.slo.budget_ms > 0 and mix.kinds
    for spec in scenario.systems:
        if spec.settings:  # every dotted override must name a setting engine.settings still has
            with_settings(spec.settings, CONFIG_DIR, tmp_path / spec.name)
        if spec.kind == "baton":
            config = yaml.safe_load(serve_config_path(spec).read_text(encoding="utf-8"))
            assert set(spec.deployments) <= set(deployment_names(config)), spec.name
            assert model_deployments(spec), spec.name


def test_a_stale_settings_override_is_refused(tmp_path):
    with pytest.raises(ValidationError, match="max_in_flight_turns"):
        with_settings({"serving.max_in_flight_turns": 12}, CONFIG_DIR, tmp_path / "config")


def test_encode_once_measures_every_phase():
    scenario, mix = load_scenario(SCENARIOS / "encode_once.yaml")
    assert [s.name for s in scenario.systems] == ["baton", "baton_fused", "baton_split", "baton_noop", "monolith"]
    inline, fused, split = scenario.systems[:3]
    assert (fused.serve_config, split.serve_config) == (
        "config/serve_local_fused.yaml",
        "config/serve_local_split.yaml",
    )
    assert model_deployments(split) == ["Encoder", "IntentClassifier", "MultiIntentDetector", "EmbeddingRetriever"]
    assert model_deployments(fused) == ["NLU"] and model_deployments(inline) == ["Orchestrator"]  # runs the models
    assert scenario.systems[3].settings == {"models.noop": True}
    assert scenario.arrival.process.value == "closed" and scenario.open_loop.arrival.process.value == "poisson"
    assert scenario.idle and scenario.encoder_alone.threads == 2 and scenario.burst.systems == ["baton"]
    assert len(kind_texts(mix, scenario.idle.kind)) >= 20


def test_estimated_encode_once_run_fits_half_an_hour():
    scenario, _ = load_scenario(SCENARIOS / "encode_once.yaml")
    n = len(scenario.systems)
    idle = scenario.idle
    seconds = (
        40 * n
        + 2 * 30  # starts, encoder alone twice
        + n * (idle.warmup_turns + idle.rounds * idle.turns_per_block) * (idle.pause_ms / 1000 + 0.15)
        + sweep_seconds(scenario.load, n)
        + sweep_seconds(scenario.open_loop, n)
        + scenario.burst.duration_s
        + scenario.burst.cooldown_s
        + 30
    )
    assert 15 * 60 < seconds < 30 * 60, seconds / 60


def test_shipped_mix_has_every_kind_and_no_test_split_text(cockpit):
    pack, _ = cockpit
    _, mix = load_scenario(SCENARIOS / "default.yaml")
    assert {"single_intent", "slot_filling", "multi_intent", "social", "out_of_scope"} <= set(mix.kinds)
    assert overlap_with_test_split(mix, {text for text, _ in pack.test_rows()}) == []
    assert any(t.endpoint == "fill_slots" for c in mix.kinds["slot_filling"].conversations for t in c)
    assert 1.0 < mean_turns(mix) < 2.0


def test_overlap_is_reported():
    _, mix = load_scenario(SCENARIOS / "default.yaml")
    assert overlap_with_test_split(mix, {"静音", "not in the mix"}) == ["静音"]


def test_same_seed_same_conversations():
    _, mix = load_scenario(SCENARIOS / "default.yaml")
    a, b = ConversationSource(mix, 3), ConversationSource(mix, 3)
    assert [a.next() for _ in range(50)] == [b.next() for _ in range(50)]


def _raw(**changes) -> dict:
    raw = yaml.safe_load((SCENARIOS / "default.yaml").read_text(encoding="utf-8"))
    raw.update(changes)
    return raw


@pytest.mark.parametrize(
    "changes,message",
    [
        ({"load": {"levels": [4], "duration_s": 5, "ramp_up_s": 9, "warmup_s": 2}}, "ramp_up_s must fit"),
        ({"burst": {"systems": ["nope"], "upscale_delay_s": 5}}, "burst.systems"),
        ({"systems": [{"name": "a", "kind": "baton"}, {"name": "a", "kind": "monolith"}]}, "repeat"),
        ({"arrival": {"process": "uniform"}}, "process"),
        ({"surprise": 1}, "surprise"),
        (
            {"open_loop": {"levels": [4], "duration_s": 5, "arrival": {"process": "closed"}}},
            "open_loop.arrival.process",
        ),
        (
            {"systems": [{"name": "m", "kind": "monolith", "serve_config": "config/serve_local_split.yaml"}]},
            "kind baton only",
        ),
        ({"systems": [{"name": "b", "kind": "baton", "serve_config": "config/no_such.yaml"}]}, "does not exist"),
        ({"systems": [{"name": "b", "kind": "baton", "serve_config": "/etc/serve.yaml"}]}, "inside the repository"),
        ({"systems": [{"name": "b", "kind": "baton", "serve_config": "../serve.yaml"}]}, "inside the repository"),
        ({"arrival": {"process": "closed"}, "burst": {"systems": ["baton"], "upscale_delay_s": 5}}, "open_loop"),
        ({"idle": {"rounds": 0}}, "rounds"),
        ({"encoder_alone": {"batch_size": 1}}, "batch_size"),
    ],
)
def test_bad_scenarios_are_refused(changes, message):
    with pytest.raises(ValidationError, match=message):
        Scenario.model_validate(_raw(**changes))


def test_a_closed_loop_burst_may_be_sized_by_the_open_loop_or_a_fixed_rate():
    burst = {"systems": ["baton"], "upscale_delay_s": 5}
    closed = {"process": "closed"}
    with_open = Scenario.model_validate(
        _raw(arrival=closed, burst=burst, open_loop={"levels": [4, 8], "duration_s": 5})
    )
    assert with_open.open_loop.arrival.process.value == "poisson" and with_open.open_loop.warmup_s == 5.0
    assert Scenario.model_validate(_raw(arrival=closed, burst={**burst, "rate_rps": 50})).burst.rate_rps == 50


def test_a_phase_drawing_from_a_missing_kind_is_refused(tmp_path):
    raw = _raw(idle={"kind": "no_such_kind"})
    (tmp_path / "cockpit_mix.yaml").write_text(
        (SCENARIOS / "cockpit_mix.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    with pytest.raises(ValueError, match="idle.kind 'no_such_kind'"):
        load_scenario(tmp_path / "s.yaml")


def test_kind_texts_are_the_first_turns_in_file_order():
    _, mix = load_scenario(SCENARIOS / "default.yaml")
    texts = kind_texts(mix, "slot_filling")
    assert texts[0] == "帮我导航" and "去虹桥火车站" not in texts
    assert len(texts) == len(mix.kinds["slot_filling"].conversations)


def test_a_systems_config_copy_is_named_absolutely_whatever_the_results_folder(tmp_path, monkeypatch):
    from benchmarks.scenario import SystemSpec
    from benchmarks.systems import _config_dir

    monkeypatch.chdir(tmp_path)  # `--out benchmarks/results/x`: the system then runs in its own folder
    config_dir = _config_dir(
        SystemSpec(name="noop", kind="baton", settings={"models.noop": True}), Path("results/noop")
    )
    assert config_dir.is_absolute() and (config_dir / "baton.yaml").is_file()
