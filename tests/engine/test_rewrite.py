"""engine.rewrite.rewrite: short follow-ups become explicit commands from the session's intent and memory.

The phrasings are chosen to be compositions the rules should handle, not strings copied from the regex lists.
"""

from __future__ import annotations

import pytest

from engine.rewrite import rewrite

AC = {"last_temperature": 22}


@pytest.mark.parametrize(
    ("text", "target", "direction"),
    [
        ("再调高两度", 24, "up"),
        ("温度再升三度吧", 25, "up"),
        ("稍微调低一点吧", 21, "down"),
        ("再降2度", 20, "down"),
        ("再暖和点", 23, "up"),
        ("凉快一些", 21, "down"),
        ("太热了", 21, "down"),
        ("有点闷啊", 21, "down"),
        ("还是有点冷", 23, "up"),
        ("调高0.5度", 22.5, "up"),
    ],
)
def test_ac_step_after_a_set_temperature(text: str, target: float, direction: str) -> None:
    r = rewrite(text, current_intent="cabin_set_ac", memory=AC)
    assert r.applied
    assert r.text == f"把空调调到{target}度"
    assert r.reason == f"ac_{direction}_from_22"


def test_ac_step_uses_the_remembered_temperature_and_other_ac_intents() -> None:
    assert (
        rewrite("再调高两度", current_intent="cabin_fan_up", memory={"last_temperature": 18}).text == "把空调调到20度"
    )
    assert (
        rewrite("再低一点", current_intent="cabin_ac_on", memory={"last_temperature": 26.5}).text == "把空调调到25.5度"
    )


def test_ac_half_degree_step() -> None:
    """再高半度: the step regex accepts 半 as a number, so half a degree must be understood, not crash."""
    r = rewrite("再高半度", current_intent="cabin_set_ac", memory=AC)
    assert r.applied and r.text == "把空调调到22.5度"


def test_ac_without_a_remembered_temperature_is_not_rewritten() -> None:
    r = rewrite("再调高两度", current_intent="cabin_set_ac", memory={})
    assert not r.applied and r.text == "再调高两度"


@pytest.mark.parametrize("text", ["再换一首别的", "这首歌不好听", "给我切一首"])
def test_next_track_after_music(text: str) -> None:
    r = rewrite(text, current_intent="cabin_play_music", memory={})
    assert r.applied and r.text == "播放下一首歌" and r.reason == "music_next"


@pytest.mark.parametrize("text", ["还是放回上一首吧", "回到刚才放的那首", "前一首更好听"])
def test_previous_track_after_music(text: str) -> None:
    r = rewrite(text, current_intent="cabin_music_next", memory={})
    assert r.applied and r.text == "播放上一首歌" and r.reason == "music_previous"


def test_music_follow_up_that_is_not_a_track_change_is_kept() -> None:
    r = rewrite("声音大一点", current_intent="cabin_play_music", memory={})
    assert not r.applied and r.text == "声音大一点"


@pytest.mark.parametrize(
    ("text", "pref"), [("能不能避开高速", "避开高速"), ("路上别走收费站", "别走收费站"), ("绕开拥堵路段吧", "绕开拥堵")]
)
def test_route_preference_after_navigation(text: str, pref: str) -> None:
    r = rewrite(text, current_intent="cabin_nav_to", memory={"last_destination": "公司"})
    assert r.applied
    assert r.text == f"导航去公司，{pref}"
    assert r.reason == "navigation_route_preference"


def test_route_preference_needs_a_remembered_destination() -> None:
    assert not rewrite("能不能避开高速", current_intent="cabin_nav_to", memory={}).applied


@pytest.mark.parametrize(
    ("text", "intent", "memory"),
    [
        ("再调高两度", "cabin_window_open", AC),  # AC phrasing, unrelated intent
        ("再换一首别的", "cabin_set_ac", AC),  # music phrasing after AC
        ("能不能避开高速", "cabin_play_music", {"last_destination": "公司"}),
        ("再调高两度", None, AC),  # no current intent
        ("打开车窗", "cabin_set_ac", AC),  # not a follow-up at all
    ],
)
def test_no_rewrite_for_unrelated_intents(text: str, intent: str | None, memory: dict) -> None:
    r = rewrite(text, current_intent=intent, memory=memory)
    assert not r.applied and r.text == text and r.reason == ""


def test_long_text_is_not_rewritten() -> None:
    long_text = "我觉得车里现在实在是太热了能不能再调高两度"
    assert len(long_text) > 16
    r = rewrite(long_text, current_intent="cabin_set_ac", memory=AC)
    assert not r.applied and r.text == long_text
    music = "这首歌真的不太好听我们能不能再换一首别的歌"
    assert not rewrite(music, current_intent="cabin_play_music", memory={}).applied
    # the limit is configurable per call
    assert (
        rewrite(long_text, current_intent="cabin_set_ac", memory=AC, max_chars=40).applied is False
    )  # not a step phrase
    assert rewrite("再调高两度", current_intent="cabin_set_ac", memory=AC, max_chars=4).applied is False


def test_surrounding_whitespace_is_ignored() -> None:
    r = rewrite("  太热了  ", current_intent="cabin_set_ac", memory=AC)
    assert r.applied and r.text == "把空调调到21度"
