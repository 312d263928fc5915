"""Scenario files validate; bad ones fail with a message; the shipped mix stays out of the pack's test split."""
from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from pydantic import ValidationError

from benchmarks.conversations import ConversationSource, mean_turns
from benchmarks.scenario import Scenario, load_scenario, overlap_with_test_split

SCENARIOS = Path(__file__).resolve().parents[2] / "benchmarks" / "scenarios"


@pytest.mark.parametrize("name", ["default.yaml", "sweep.yaml", "closed.yaml"])
def test_shipped_scenarios_validate(name):
    scenario, mix = load_scenario(SCENARIOS / name)
    assert scenario.slo.budget_ms > 0 and mix.kinds


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


@pytest.mark.parametrize("changes,message", [
    ({"load": {"levels": [4], "duration_s": 5, "ramp_up_s": 9, "warmup_s": 2}}, "ramp_up_s must fit"),
    ({"burst": {"systems": ["nope"], "upscale_delay_s": 5}}, "burst.systems"),
    ({"systems": [{"name": "a", "kind": "baton"}, {"name": "a", "kind": "monolith"}]}, "repeat"),
    ({"arrival": {"process": "uniform"}}, "process"),
    ({"surprise": 1}, "surprise"),
])
def test_bad_scenarios_are_refused(changes, message):
    with pytest.raises(ValidationError, match=message):
        Scenario.model_validate(_raw(**changes))
