"""A reason said before the request (风直往脸上扑，风量调低) pulls the whole turn's reading toward the opposite intent:
through TurnEngine with the real cockpit pack and scripted models, the one clause that asks for something decides
between fusion's top two, and an intent and its opposite are never read as two requests."""

from __future__ import annotations

from protocol.http_chat import ChatRequest, TurnStatus
from tests.support.fakes import FakeModelClient, Rig

TEXT = "后排说风直往脸上扑，风量调低"


def reason_pulls_up(request_clause: list[tuple[str, float]], detector: float = 0.9) -> FakeModelClient:
    fake = FakeModelClient()
    # the whole turn: a near tie with the opposite on top, so fusion clarifies
    fake.on(
        TEXT,
        classifier=[("cabin_fan_up", 0.5), ("cabin_fan_down", 0.45)],
        retriever=[("cabin_fan_up", 0.66), ("cabin_fan_down", 0.34)],
        detector=[("cabin_fan_down", 0.82)],
    )
    fake.on("后排说风直往脸上扑", classifier=[("cabin_fan_up", 0.4)])
    fake.on("风量调低", classifier=request_clause, detector=[(request_clause[0][0], detector)])
    return fake


async def turn(fake: FakeModelClient, text: str = TEXT):
    return await Rig(models=fake).engine.chat(ChatRequest(user_id="u1", session_id="s1", text=text))


async def test_the_one_request_clause_decides_between_fusions_top_two():
    resp = await turn(reason_pulls_up([("cabin_fan_down", 0.95)]))
    assert resp.intent == "cabin_fan_down" and resp.status == TurnStatus.completed
    fusion = resp.routing_debug.fusion
    assert fusion.decision == "execute" and fusion.ranked[0].intent == "cabin_fan_down"
    assert "the one request clause reads cabin_fan_down" in fusion.reason
    assert [c.selected for c in resp.routing_debug.planner.clauses] == [[], ["cabin_fan_down"]]


async def test_a_request_clause_naming_neither_of_the_top_two_changes_nothing():
    resp = await turn(reason_pulls_up([("cabin_volume_down", 0.95)]))
    assert resp.intent == "cabin_fan_up" and resp.status == TurnStatus.clarify
    assert "request clause" not in resp.routing_debug.fusion.reason


async def test_a_clause_too_unsure_to_be_a_request_changes_nothing():
    resp = await turn(reason_pulls_up([("cabin_fan_down", 0.5)], detector=0.3))
    assert resp.intent == "cabin_fan_up" and resp.status == TurnStatus.clarify


async def test_a_sure_fusion_is_not_overruled_by_a_clause():
    fake = reason_pulls_up([("cabin_fan_down", 0.95)])
    fake.on(
        TEXT,
        classifier=[("cabin_fan_up", 0.9), ("cabin_fan_down", 0.08)],
        retriever=[("cabin_fan_up", 0.9)],
        detector=[("cabin_fan_up", 0.9), ("cabin_volume_down", 0.8)],
    )  # two requests read: the planner runs
    resp = await turn(fake)
    assert resp.routing_debug.planner is not None and resp.routing_debug.planner.clauses[1].selected == [
        "cabin_fan_down"
    ]
    assert resp.intent == "cabin_fan_up" and "request clause" not in resp.routing_debug.fusion.reason


async def test_an_intent_and_its_opposite_are_not_two_requests():
    text = "家里人在路边等着呢，把门锁打开让她上车"
    fake = FakeModelClient()
    fake.on(
        text,
        classifier=[("cabin_door_lock", 0.9)],
        retriever=[("cabin_door_lock", 0.8)],
        detector=[("cabin_door_lock", 0.87), ("cabin_door_unlock", 0.7), ("cabin_nav_to", 0.6)],
    )
    resp = await turn(fake, text)
    assert [c.intent for c in resp.detected_intents] == ["cabin_door_lock", "cabin_nav_to"]


async def test_the_request_clause_is_read_with_the_whole_turns_words():
    """The clause that names the device describes it running; the turn's last words ask it off."""
    text = "雨刮咔哒咔哒响个不停，吵得娃睡不着，停了"
    fake = FakeModelClient()
    fake.on(text, classifier=[("cabin_wiper_on", 0.45), ("cabin_wiper_off", 0.4)], retriever=[("cabin_wiper_off", 0.6)])
    fake.on("雨刮咔哒咔哒响个不停", classifier=[("cabin_wiper_on", 0.95)], detector=[("cabin_wiper_on", 0.9)])
    resp = await turn(fake, text)
    assert resp.intent == "cabin_wiper_off" and resp.status == TurnStatus.completed
    assert (
        "request clause" in resp.routing_debug.fusion.reason and "said as ceasing" in resp.routing_debug.fusion.reason
    )
