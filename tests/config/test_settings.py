"""Settings validated at load: the session lease outlasts every turn, every stage has a budget, the commit leaves
room."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from config.budgets import STAGES
from config.settings import Settings, load_settings
from tests.support.fakes import CONFIG_DIR


def base_settings() -> Settings:
    """The shipped settings as loaded (the unit-test rig's are scaled up)."""
    return load_settings(CONFIG_DIR, {})


def _with(**changes) -> dict:
    raw = base_settings().model_dump()
    for dotted, value in changes.items():
        target = raw
        *parents, leaf = dotted.split("__")
        for key in parents:
            target = target[key]
        target[leaf] = value
    return raw


def test_the_shipped_settings_are_valid():
    Settings.model_validate(base_settings().model_dump())


def test_a_session_lease_shorter_than_the_longest_turn_is_refused():
    budgets = base_settings().budgets
    # the longest turn: a voice turn that escalates to the LLM planner (8600 + 3000 - 600 ms)
    longest = max(budgets.turn_ms[m] for m in budgets.modalities()) + budgets.escalation_ms()
    assert longest == budgets.turn_ms["voice_asr"] + budgets.turn_ms["llm"] - budgets.turn_ms["text"]
    with pytest.raises(ValidationError, match="session_lease_s"):
        Settings.model_validate(_with(database__session_lease_s=longest / 1000.0))
    Settings.model_validate(_with(database__session_lease_s=longest / 1000.0 + 1))


def test_every_stage_needs_a_budget_and_only_stages_have_one():
    stages = dict(base_settings().budgets.stages_ms)
    stages.pop("commit")
    with pytest.raises(ValidationError, match="missing commit"):
        Settings.model_validate(_with(budgets__stages_ms=stages))
    with pytest.raises(ValidationError, match="not a stage"):
        Settings.model_validate(_with(budgets__stages_ms={**base_settings().budgets.stages_ms, "clasifier": 10}))
    assert {"auth", "store", "lease", "encoder", "commit"} <= set(STAGES)


def test_the_commits_reserve_must_leave_the_turn_to_the_models():
    text = base_settings().budgets.turn_ms["text"]
    with pytest.raises(ValidationError, match="commit"):
        Settings.model_validate(_with(budgets__stages_ms={**base_settings().budgets.stages_ms, "commit": text / 2}))


def test_an_unknown_head_is_refused():
    with pytest.raises(ValidationError, match="unknown head"):
        Settings.model_validate(_with(models__heads={"reranker": {"input": "text"}}))


def test_admission_bounds_a_turn_by_the_model_budgets_it_queues_under():
    budgets = load_settings(CONFIG_DIR, {}).budgets
    stages = budgets.stages_ms
    assert budgets.admission_ms("text") == min(budgets.turn_ms["text"], stages["encoder"]) < budgets.turn_ms["text"]
    assert budgets.admission_ms("voice_asr") == min(budgets.turn_ms["voice_asr"], stages["asr"] + stages["encoder"])
    assert budgets.admission_ms("image_ocr") == min(budgets.turn_ms["image_ocr"], stages["ocr"] + stages["encoder"])


def test_the_llm_escalation_must_leave_the_turn_room():
    turn_ms = dict(base_settings().budgets.turn_ms)
    with pytest.raises(ValidationError, match="turn_ms.llm"):
        Settings.model_validate(_with(budgets__turn_ms={**turn_ms, "llm": turn_ms["text"]}))
    stages = dict(base_settings().budgets.stages_ms)
    with pytest.raises(ValidationError, match="planner_llm"):
        Settings.model_validate(_with(budgets__stages_ms={**stages, "planner_llm": turn_ms["llm"]}))
    no_llm = {k: v for k, v in turn_ms.items() if k != "llm"}
    assert Settings.model_validate(_with(budgets__turn_ms=no_llm)).budgets.escalation_ms() == 0.0


def test_overrides_merge_key_by_key_over_both_files_and_are_validated_like_them():
    shipped = base_settings()
    over = load_settings(
        CONFIG_DIR,
        {"BATON_PACK": "timeflow"},
        {
            "models": {"device": "cuda:1", "heads": {"classifier": {"input": "text", "checkpoint": "/m/bert"}}},
            "auth": {"require_token": True},
            "budgets": {"stages_ms": {"ocr": 2000}, "turn_ms": {"image_ocr": 2600}},
            "pack": "cockpit",
        },
    )
    assert over.models.device == "cuda:1" and over.models.head("classifier").checkpoint == "/m/bert"
    assert over.models.head("detector") == shipped.models.head("detector")  # siblings of an overridden key stay
    assert (
        over.models.encoder_runtime == shipped.models.encoder_runtime
        and over.auth.token_ttl_s == shipped.auth.token_ttl_s
    )
    assert over.auth.require_token and over.budgets.stages_ms["ocr"] == 2000
    assert over.budgets.stages_ms["asr"] == shipped.budgets.stages_ms["asr"]
    assert over.pack == "timeflow"  # the environment still has the last word
    with pytest.raises(ValidationError, match="no_such_key"):
        load_settings(CONFIG_DIR, {}, {"auth": {"no_such_key": 1}})
    with pytest.raises(ValidationError, match="device"):
        load_settings(CONFIG_DIR, {}, {"models": {"device": "gpu"}})


def test_the_environment_is_read_once_into_the_settings_and_its_secrets_stay_secret():
    env = {
        "DATABASE_URL": "postgresql://u:pw@db/baton",
        "BATON_AUTH_SECRET": "s" * 40,
        "BATON_FAULTS": "encoder:delay_ms=5",
        "BATON_FAULTS_FILE": "/run/faults",
        "PROMETHEUS_MULTIPROC_DIR": "/run/metrics",
        "BATON_STATE_DIR": "/srv/var",
    }
    settings = load_settings(CONFIG_DIR, env)
    assert settings.env.database_url is not None and settings.env.database_url.get_secret_value() == env["DATABASE_URL"]
    assert settings.env.auth_secret is not None and settings.env.auth_secret.get_secret_value() == "s" * 40
    assert (settings.env.faults, str(settings.env.faults_file), str(settings.env.metrics_dir)) == (
        "encoder:delay_ms=5",
        "/run/faults",
        "/run/metrics",
    )
    assert str(settings.state_dir) == "/srv/var"
    assert "pw" not in repr(settings) and "pw" not in str(settings.model_dump())  # secrets never print
    bare = load_settings(CONFIG_DIR, {})
    assert bare.env.database_url is None and bare.env.faults == "" and bare.env.faults_file is None


def test_the_test_clock_is_refused_in_a_production_posture_and_needs_a_zone():
    pinned = {"testing": {"now": "2026-12-06T23:30:00+08:00"}}
    assert load_settings(CONFIG_DIR, {}, pinned).testing.now is not None
    with pytest.raises(ValidationError, match="testing.now"):
        load_settings(CONFIG_DIR, {}, {**pinned, "auth": {"require_token": True}})
    with pytest.raises(ValidationError, match="zone offset"):
        load_settings(CONFIG_DIR, {}, {"testing": {"now": "2026-12-06T23:30:00"}})
    from serve_app.args import AppArgs
    from serve_app.ops.launcher import load_serve_config

    gpu = load_serve_config(CONFIG_DIR / "serve_gpu.yaml", {})["applications"][0]["args"]
    gpu["overrides"] = {**gpu.get("overrides", {}), **pinned}
    with pytest.raises(ValidationError, match="testing.now"):
        AppArgs.model_validate(gpu).settings(environ={})
