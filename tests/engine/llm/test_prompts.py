"""Prompt files: load order, required vs optional files, strict variables, rendering, and the shipped packs."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from engine.llm.prompts import FILE_ORDER, PromptError, PromptsConfig, PromptSet, catalog_of, format_now
from engine.pack import find_pack, load_pack

ROOT = Path(__file__).resolve().parents[3]
CONFIG_DIR = ROOT / "config"
NOW = datetime(2026, 12, 1, 2, 0, tzinfo=UTC)  # 10:00 in Shanghai, a Tuesday
SHANGHAI_NOW = "2026年12月1日 星期二 10:00（Asia/Shanghai）"
CATALOG = [
    {"id": "cabin_set_ac", "label": "调节空调温度", "slots": [{"name": "temperature", "type": "temperature"}]},
    {"id": "cs_cancel_order", "label": "取消订单", "confirm": True},
]


def write_pack(tmp_path: Path, files: dict[str, str]) -> Path:
    folder = tmp_path / "prompts"
    folder.mkdir(parents=True)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_sections_load_in_the_fixed_order_whatever_the_folder_holds(tmp_path):
    pack_dir = write_pack(
        tmp_path,
        {
            "SKILLS.md": "skills",
            "PROFILE.md": "profile",
            "SOUL.md": "soul",
            "AGENTS.md": "agents",
            "NOTES.md": "not a prompt file",
        },
    )
    prompts = PromptSet.load(pack_dir)
    assert prompts.names == [name for name, _ in FILE_ORDER]
    assert prompts.render(catalog=[], now=NOW) == "agents\n\nsoul\n\nprofile\n\nskills"


@pytest.mark.parametrize("missing", ["AGENTS.md", "SOUL.md"])
def test_a_missing_required_file_is_an_error_naming_it(tmp_path, missing):
    files = {"AGENTS.md": "a", "SOUL.md": "s"}
    del files[missing]
    pack_dir = write_pack(tmp_path, files)
    with pytest.raises(PromptError, match=missing) as caught:
        PromptSet.load(pack_dir)
    assert str(pack_dir / "prompts" / missing) in str(caught.value)


def test_optional_files_are_skipped_when_absent(tmp_path):
    prompts = PromptSet.load(write_pack(tmp_path, {"AGENTS.md": "角色", "SOUL.md": "性格", "SKILLS.md": "技能"}))
    assert prompts.names == ["AGENTS.md", "SOUL.md", "SKILLS.md"]
    assert prompts.render(catalog=[], now=NOW) == "角色\n\n性格\n\n技能"


def test_an_unknown_variable_is_an_error_naming_the_variable_and_file(tmp_path):
    pack_dir = write_pack(tmp_path, {"AGENTS.md": "ok", "SOUL.md": "你好 {{ user_name }}"})
    prompts = PromptSet.load(pack_dir)
    with pytest.raises(PromptError, match="user_name") as caught:
        prompts.render(catalog=[], now=NOW)
    assert "SOUL.md" in str(caught.value)


def test_a_missing_key_in_a_known_variable_is_an_error_too(tmp_path):
    prompts = PromptSet.load(write_pack(tmp_path, {"AGENTS.md": "{{ user_profile.name }}", "SOUL.md": "s"}))
    with pytest.raises(PromptError, match="name"):
        prompts.render(catalog=[], now=NOW, user_profile={})
    assert prompts.render(catalog=[], now=NOW, user_profile={"name": "张三"}).startswith("张三")


def test_a_template_syntax_error_fails_at_load_naming_the_file(tmp_path):
    with pytest.raises(PromptError, match="AGENTS.md"):
        PromptSet.load(write_pack(tmp_path, {"AGENTS.md": "{% for x in catalog %}", "SOUL.md": "s"}))


def test_render_shows_the_catalog_labels_and_the_time_in_the_users_zone(tmp_path):
    pack_dir = write_pack(
        tmp_path,
        {
            "AGENTS.md": "现在是 {{ now }}",
            "SOUL.md": "{% for i in catalog %}{{ i.label }}/{{ i.agent }}/{{ i.confirm }}"
            "{% for s in i.slots %}:{{ s.name }}:{{ s.required }}{% endfor %};{% endfor %}",
        },
    )
    text = PromptSet.load(pack_dir).render(catalog=CATALOG, now=NOW, user_profile={"timezone": "Asia/Shanghai"})
    assert SHANGHAI_NOW in text
    # plain dicts get the full shape: missing agent/confirm/required have defaults, not StrictUndefined errors
    assert "调节空调温度/None/False:temperature:True;取消订单/None/True;" in text


def test_the_zone_argument_wins_and_a_naive_time_is_refused(tmp_path):
    prompts = PromptSet.load(write_pack(tmp_path, {"AGENTS.md": "{{ now }}|{{ now_iso }}", "SOUL.md": "s"}))
    assert prompts.render(catalog=[], now=NOW, zone="Asia/Tokyo").startswith(
        "2026年12月1日 星期二 11:00（Asia/Tokyo）|2026-12-01T11:00+09:00"
    )
    assert prompts.render(catalog=[], now=NOW).startswith("2026年12月1日 星期二 02:00（UTC）")
    with pytest.raises(PromptError, match="tz-aware"):
        prompts.render(catalog=[], now=datetime(2026, 12, 1, 10, 0))
    with pytest.raises(PromptError, match="Mars/Base"):
        prompts.render(catalog=[], now=NOW, zone="Mars/Base")


def test_format_now_reads_like_the_prompt_states_it():
    from zoneinfo import ZoneInfo

    assert format_now(NOW, ZoneInfo("Asia/Shanghai")) == SHANGHAI_NOW
    assert (
        format_now(datetime(2026, 12, 6, 23, 5, tzinfo=UTC), ZoneInfo("Asia/Shanghai"))
        == "2026年12月7日 星期一 07:05（Asia/Shanghai）"
    )


def test_a_prompt_over_max_chars_is_an_error(tmp_path):
    pack_dir = write_pack(tmp_path, {"AGENTS.md": "长" * 50, "SOUL.md": "s"})
    with pytest.raises(PromptError, match="max_chars=20"):
        PromptSet.load(pack_dir, PromptsConfig(max_chars=20)).render(catalog=[], now=NOW)


def test_a_section_that_renders_empty_leaves_no_gap(tmp_path):
    pack_dir = write_pack(
        tmp_path, {"AGENTS.md": "a", "SOUL.md": "s", "SKILLS.md": "{% if capabilities %}{{ capabilities }}{% endif %}"}
    )
    prompts = PromptSet.load(pack_dir)
    assert prompts.render(catalog=[], now=NOW) == "a\n\ns"
    assert prompts.render(catalog=[], now=NOW, capabilities="能力表") == "a\n\ns\n\n能力表"


def shipped(name: str):
    """A shipped pack's folder and Pack, loaded without building its models."""
    pack_dir = find_pack(name, shipped_dir=CONFIG_DIR / "domains", state_dir=ROOT / "var" / "_no_state_")
    return pack_dir, load_pack(pack_dir)


def test_catalog_of_a_pack_lists_its_task_intents_with_slots():
    _, pack = shipped("timeflow")
    catalog = catalog_of(pack)
    by_id = {entry["id"]: entry for entry in catalog}
    assert "__social__" not in by_id and "__out_of_scope__" not in by_id
    assert by_id["schedule_create"]["agent"] == "schedule_todo_agent"
    assert by_id["schedule_create"]["slots"][0] == {"name": "when", "type": "datetime", "required": True}
    assert by_id["schedule_delete"]["confirm"] is True
    assert "__social__" in {entry["id"] for entry in catalog_of(pack, include_special=True)}


@pytest.mark.parametrize("name", ["cockpit", "timeflow"])
def test_the_shipped_prompts_load_and_render_with_the_real_pack(name):
    pack_dir, pack = shipped(name)
    prompts = PromptSet.load(pack_dir)
    assert prompts.names == [name for name, _ in FILE_ORDER]
    text = prompts.render(
        catalog=catalog_of(pack),
        now=NOW,
        user_profile={"称呼": "小王", "timezone": "Asia/Shanghai"},
        capabilities="能力表占位",
    )
    assert "小王" in text and "能力表占位" in text
    # the time changes every minute: the planner states it after the unchanging prompt (test_planner.py)
    assert SHANGHAI_NOW not in text
    for intent in catalog_of(pack):
        assert f"{intent['label']}（{intent['id']}）" in text
    assert "{{" not in text and "{%" not in text
    # without a profile or capabilities the files still render
    assert prompts.render(catalog=catalog_of(pack), now=NOW)


def test_the_cockpit_prompt_marks_confirmed_actions_and_slots():
    pack_dir, pack = shipped("cockpit")
    text = PromptSet.load(pack_dir).render(catalog=catalog_of(pack), now=NOW)
    assert "- 取消订单（cs_cancel_order）：order_id（order_id，必填）；需确认\n" in text
    assert "- 打开车窗（cabin_window_open）\n" in text  # one intent per line


def test_the_timeflow_prompt_names_each_intents_agent():
    pack_dir, pack = shipped("timeflow")
    text = PromptSet.load(pack_dir).render(catalog=catalog_of(pack), now=NOW)
    assert "- 新建日程（schedule_create）：when（datetime，必填）、title（text，可选） → schedule_todo_agent\n" in text


def test_the_data_pack_defaults_render_over_any_catalog():
    prompts = PromptSet.load(CONFIG_DIR / "data_pack_prompts", PromptsConfig(dir="."))
    assert prompts.names == [name for name, _ in FILE_ORDER]
    text = prompts.render(
        catalog=[
            {
                "id": "weather",
                "label": "查天气",
                "description": "问某地天气",
                "slots": [{"name": "city", "type": "text"}],
            }
        ],
        now=NOW,
        zone="Asia/Shanghai",
    )
    assert "- 查天气（weather）：city（text，必填）——问某地天气" in text and SHANGHAI_NOW not in text
    assert "用户档案" not in text and "用户档案" in prompts.render(catalog=[], now=NOW, user_profile={"称呼": "小王"})


def test_the_timeflow_prompt_carries_the_sub_agents_capability_table():
    from engine.agents.registry import AgentRegistry

    pack_dir, pack = shipped("timeflow")
    table = AgentRegistry.default().render_capabilities()
    text = PromptSet.load(pack_dir).render(catalog=catalog_of(pack), now=NOW, capabilities=table)
    assert table in text
    for line in table.splitlines()[1:]:
        assert line in text  # every function of every agent
    assert "`long_task_split_agent.split`" in text
