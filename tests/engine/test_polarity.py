"""Which side of an opposite pair a turn asks for (the cockpit pack's `rules.ceasing`, `rules.sides` and
`rules.opposites`), through TurnEngine with the real pack and scripted models that read the words as the other side."""

from __future__ import annotations

import pytest

from engine.fusion import FusionResult, RouteDecision
from engine.pack import Pack, Rules
from engine.polarity import Polarity
from protocol.http_chat import ChatRequest, TurnStatus
from protocol.turn_debug import Candidate
from tests.support.fakes import FakeModelClient, Rig, pack


async def said(text: str, on: str) -> tuple:
    rig = Rig(models=FakeModelClient().sure(text, on))
    resp = await rig.engine.chat(ChatRequest(user_id="u1", session_id="s1", text=text))
    return resp, rig


@pytest.mark.parametrize(
    ("text", "on", "off"),
    [
        ("天窗别开着了", "cabin_sunroof_open", "cabin_sunroof_close"),
        ("座椅加热歇会儿", "cabin_seat_heat_on", "cabin_seat_heat_off"),
        ("声音别那么大", "cabin_volume_up", "cabin_volume_down"),
        ("氛围灯别亮了", "cabin_lights_on", "cabin_lights_off"),
        ("后座的阅读灯不用一直亮着", "cabin_lights_on", "cabin_lights_off"),
        ("座椅没必要老热着", "cabin_seat_heat_on", "cabin_seat_heat_off"),
        ("空调没必要开了", "cabin_ac_on", "cabin_ac_off"),
        ("雨停了，刮水器不用再刮了", "cabin_wiper_on", "cabin_wiper_off"),
        ("进了地库，雨刷不用刮了", "cabin_wiper_on", "cabin_wiper_off"),
        ("音乐不用放了", "cabin_play_music", "cabin_music_pause"),
        ("天凉了，冷气甭开了", "cabin_ac_on", "cabin_ac_off"),
        ("孩子要睡了，别让空调吹得那么猛", "cabin_fan_up", "cabin_fan_down"),
        ("车停路边，锁上门别让人开", "cabin_door_unlock", "cabin_door_lock"),
        ("喇叭声音忒响了，收一收", "cabin_volume_up", "cabin_volume_down"),
        ("顶上那灯好刺眼", "cabin_lights_on", "cabin_lights_off"),
        ("一上车就开着座椅加热，屁股都烫了，关掉吧", "cabin_seat_heat_on", "cabin_seat_heat_off"),
        ("刚开的那首歌太闹，调小点", "cabin_volume_up", "cabin_volume_down"),
    ],
)
async def test_ceasing_words_turn_an_on_top_to_its_off_intent(text, on, off):
    resp, _ = await said(text, on)
    assert resp.intent == off and resp.status == TurnStatus.completed
    fusion = resp.routing_debug.fusion
    assert fusion.ranked[0].intent == off and on not in [c.intent for c in fusion.ranked[:1]]
    assert "said as ceasing" in fusion.reason


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("风别这么小，加两档", "cabin_fan_up"),  # the negated state is the "off" side: the request is "on"
        ("打开天窗", "cabin_sunroof_open"),  # no ceasing words
        ("天窗别开着了", "cabin_sunroof_close"),  # already the "off" side
        ("音乐歇一会儿", "cabin_music_next"),  # not an intent with an opposite
        ("不用关，空调开着吧", "cabin_ac_on"),  # 不用 before another verb
        ("不用吹头发了，开空调", "cabin_ac_on"),  # 不用 with something else between it and 了
        ("雨太大了，雨刷快一点", "cabin_wiper_on"),  # too much rain is no excess of the wiper
        ("声音太小了，再大点", "cabin_volume_up"),  # too little asks for more
    ],
)
async def test_everything_else_keeps_the_models_reading(text, intent):
    resp, _ = await said(text, intent)
    assert resp.intent == intent and "said as ceasing" not in resp.routing_debug.fusion.reason


def test_a_pack_naming_an_unknown_opposite_does_not_load():
    cockpit = pack("cockpit")
    rules = cockpit.rules.model_copy(update={"opposites": {"cabin_ac_on": "cabin_ac_offf"}})
    with pytest.raises(ValueError, match="cabin_ac_offf"):
        Pack(**{**cockpit.model_dump(), "rules": rules.model_dump()})


def test_an_off_verb_said_last_turns_only_when_it_stands_alone():
    polarity = Polarity(pack("cockpit").rules)
    assert polarity.turned("你一上车就开空调，冻死了，关了它！", "cabin_ac_on") == "cabin_ac_off"
    assert polarity.turned("打开空调，关窗", "cabin_ac_on") is None  # its own object: another request
    assert polarity.turned("车里太闷，开空调吧", "cabin_ac_on") is None


def test_the_roads_noise_is_no_excess_of_the_device():
    polarity = Polarity(pack("cockpit").rules)
    assert polarity.turned("高速上噪音太大，歌听不清，开大点", "cabin_volume_up") is None
    assert polarity.turned("风噪好大，音乐再响点", "cabin_volume_up") is None
    assert polarity.turned("这音乐也太吵了", "cabin_volume_up") == "cabin_volume_down"


def test_without_rules_nothing_changes():
    fused = FusionResult(RouteDecision.execute, "r", [Candidate(intent="cabin_ac_on", score=0.9)])
    assert Polarity(Rules()).read("空调歇会儿", fused) is fused


def test_a_ceasing_pattern_that_is_no_regex_is_refused_naming_it():
    with pytest.raises(ValueError, match=r"rules.ceasing: '别\(开着' is not a valid regex"):
        Rules(ceasing=["别(开着"])


@pytest.mark.parametrize(
    ("text", "read", "meant"),
    [
        ("镜子贴着车门呢，给我掰开", "cabin_mirror_fold", "cabin_mirror_unfold"),
        ("出了洗车房，把折起来的镜子复位", "cabin_mirror_fold", "cabin_mirror_unfold"),
        ("巷子太窄了，镜子往回收", "cabin_mirror_unfold", "cabin_mirror_fold"),
        ("评书听不清，往大了拧一拧", "cabin_volume_down", "cabin_volume_up"),
        ("宝宝睡着了，出风给我调小点", "cabin_fan_up", "cabin_fan_down"),
        ("搞错了，不是锁上，是解锁", "cabin_door_lock", "cabin_door_unlock"),
        ("毛毛雨，雨刷开个间歇", "cabin_wiper_off", "cabin_wiper_on"),
        ("收音机的声音有点小", "cabin_volume_down", "cabin_volume_up"),  # too little asks for more
        ("后排说风好弱", "cabin_fan_down", "cabin_fan_up"),
    ],
)
async def test_the_last_words_naming_a_side_decide_between_the_pair(text, read, meant):
    resp, _ = await said(text, read)
    assert resp.intent == meant and resp.status == TurnStatus.completed
    assert f"the words name the other side: {read} → {meant}" in resp.routing_debug.fusion.reason


@pytest.mark.parametrize(
    ("text", "intent"),
    [
        ("音量别调大", "cabin_volume_down"),  # taken back by a negation
        ("把镜子打开，现在还是折叠的", "cabin_mirror_unfold"),  # 折叠的 says what is, not what to do
        ("车门锁好了吗，解锁一下", "cabin_door_unlock"),  # the last side named decides
        ("后视镜折起来", "cabin_mirror_fold"),  # its own side
        ("把空调温度调高", "cabin_set_ac"),  # no pair
    ],
)
async def test_words_of_no_other_side_keep_the_models_reading(text, intent):
    resp, _ = await said(text, intent)
    assert resp.intent == intent and "other side" not in resp.routing_debug.fusion.reason


def test_sides_naming_an_intent_without_an_opposite_or_no_regex_are_refused():
    cockpit = pack("cockpit")
    rules = cockpit.rules.model_dump()
    rules["sides"]["words"]["cabin_set_ac"] = ["调高"]
    with pytest.raises(ValueError, match="without an opposite: \\['cabin_set_ac'\\]"):
        Pack(**{**cockpit.model_dump(), "rules": rules})
    with pytest.raises(ValueError, match=r"rules.sides.words.cabin_volume_up: '\(往大' is not a valid regex"):
        Rules(sides={"words": {"cabin_volume_up": ["(往大"]}})
