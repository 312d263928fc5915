"""`llm.backends` and `llm.use`: set in baton.yaml or a Serve config's overrides, validated at load; each key read once
from the variable its backend names, kept secret; nothing configured by default (Baton runs offline)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from config.settings import load_settings
from tests.support.fakes import CONFIG_DIR

QWEN = {
    "base_url": "https://dashscope.aliyuncs.com/compatible-mode/v1/",
    "model": "qwen-plus",
    "api_key_env": "DASHSCOPE_API_KEY",
    "generates": True,
}
KEY = "sk-dashscope-1234567890abcdef"


def load(llm: dict, env: dict | None = None):
    return load_settings(CONFIG_DIR, env or {}, {"llm": llm})


def test_by_default_no_backend_is_configured_and_the_local_planner_is_the_only_one():
    llm = load_settings(CONFIG_DIR, {}).llm
    assert llm.backends == {} and llm.chain("planner") == ["local"]
    assert llm.chain("social") == [] and not llm.writes_replies and not llm.answers_outside_catalog


def test_overrides_add_a_backend_and_the_key_is_read_once_from_the_variable_it_names():
    settings = load(
        {"backends": {"qwen": QWEN}, "use": {"planner": ["local", "qwen"], "social": ["qwen"]}},
        {"DASHSCOPE_API_KEY": KEY},
    )
    qwen = settings.llm.backends["qwen"]
    assert qwen.base_url == "https://dashscope.aliyuncs.com/compatible-mode/v1"  # the slash the SDK adds, once
    assert qwen.api_key_env == "DASHSCOPE_API_KEY"
    assert settings.llm.chain("planner") == ["local", "qwen"] and settings.llm.answers_outside_catalog
    assert settings.env.llm_keys["qwen"].get_secret_value() == KEY
    # the key is nowhere a settings object is printed or dumped
    assert KEY not in repr(settings) and KEY not in str(settings.model_dump()) and KEY not in settings.model_dump_json()


def test_an_unset_variable_gives_no_key():
    settings = load({"backends": {"qwen": QWEN}, "use": {"planner": ["qwen"]}})
    assert settings.env.llm_keys == {}


def test_local_writes_for_users_only_with_generate_replies():
    assert load({"generate_replies": True}).llm.chain("social") == ["local"]
    mixed = load({"backends": {"qwen": QWEN}, "use": {"social": ["local", "qwen"]}})
    assert mixed.llm.chain("social") == ["qwen"]


@pytest.mark.parametrize(
    ("llm", "said"),
    [
        ({"use": {"planner": ["qwen"]}}, "llm.use.planner names 'qwen', which is not in llm.backends"),
        ({"backends": {"local": QWEN}}, "not 'local'"),
        ({"backends": {"Qwen Max": QWEN}}, "a backend's name"),
        ({"backends": {"ds": {**QWEN, "generates": False}}, "use": {"social": ["ds"]}}, "generates: true"),
        ({"backends": {"qwen": QWEN}, "use": {"planner": ["qwen", "qwen"]}}, "names a backend twice"),
        ({"backends": {"qwen": {**QWEN, "headers": {"Authorization": "Bearer x"}}}}, "api_key_env instead"),
        ({"backends": {"qwen": {**QWEN, "api_key_env": "sk-abc-123"}}}, "the name of an environment variable"),
        ({"backends": {"qwen": {**QWEN, "base_url": "dashscope.aliyuncs.com"}}}, "http:// or https://"),
        ({"backends": {"qwen": {**QWEN, "max_concurrency": 0}}}, "greater than 0"),
        ({"backends": {"qwen": {**QWEN, "timeout": 3}}}, "Extra inputs are not permitted"),
    ],
)
def test_a_bad_backend_config_is_refused_at_load_saying_what_to_change(llm, said):
    with pytest.raises(ValidationError, match=said):
        load(llm)
