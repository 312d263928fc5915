"""The text models started on arrival (`TurnEngine.understand_ahead`): the turn routes with that one call when it
routes the same words, and a call for other words never decides a turn."""
from __future__ import annotations

import asyncio

import pytest

from engine.rewrite import may_rewrite
from engine.session import SessionState
from engine.turn_context import TurnContext
from protocol.http_chat import ChatRequest, TurnStatus

from fakes import FakeModelClient, Rig, base_settings


def context(rig: Rig, deadline, ahead) -> TurnContext:
    return TurnContext(deadline=deadline, world=rig.worlds.for_turn("u1"), ahead=ahead)


async def test_a_turn_routes_with_the_call_started_on_arrival() -> None:
    fake = FakeModelClient().sure("打开车窗", "cabin_window_open")
    rig = Rig(models=fake)
    deadline = rig.engine.deadline("text")
    ahead = rig.engine.understand_ahead(" 打开车窗 ", deadline)
    assert ahead is not None and ahead.text == "打开车窗" and len(fake.requests) == 1
    await asyncio.sleep(0.01)  # the caller authenticates and leases meanwhile
    session = SessionState(session_id="s1", user_id="u1")
    resp = await rig.engine.chat_on(session, ChatRequest(user_id="u1", session_id="s1", text="打开车窗"),
                                    context(rig, deadline, ahead))
    assert resp.status == TurnStatus.completed and resp.intent == "cabin_window_open"
    assert len(fake.requests) == 1, "the call started on arrival was the turn's one call"
    assert resp.timings.degraded == [] and resp.timings.spans_ms["encoder"][0] <= 1.0


async def test_a_call_for_other_words_is_cancelled_and_never_decides() -> None:
    fake = FakeModelClient(delays={"encoder": 0.05}).sure("打开车窗", "cabin_window_open")
    fake.sure("关窗", "cabin_window_close")
    rig = Rig(models=fake)
    deadline = rig.engine.deadline("text")
    ahead = rig.engine.understand_ahead("打开车窗", deadline)
    await asyncio.sleep(0.01)  # its encoder is at work when the turn routes other words (e.g. a session's rewrite)
    session = SessionState(session_id="s1", user_id="u1")
    resp = await rig.engine.chat_on(session, ChatRequest(user_id="u1", session_id="s1", text="关窗"),
                                    context(rig, deadline, ahead))
    assert resp.intent == "cabin_window_close"
    assert [r.text for r in fake.requests] == ["打开车窗", "关窗"]
    assert "encoder" in fake.cancelled and fake.texts("encoder") == ["打开车窗", "关窗"]


@pytest.mark.parametrize("text", ["", "   ", "你好", "再高一点", "有点冷", "换一首", "不走高速", "x" * 10_000])
def test_words_that_are_invalid_social_or_rewritable_wait_for_the_session(text: str) -> None:
    rig = Rig()
    assert rig.engine.understand_ahead(text, rig.engine.deadline("text")) is None
    assert rig.models.requests == []


def test_may_rewrite_covers_every_rewrite_rule() -> None:
    from engine.rewrite import rewrite

    memory = {"last_temperature": 22, "last_destination": "机场"}
    said = {"cabin_set_ac": ["再高一点", "低两度", "有点热"], "cabin_play_music": ["下一首", "上一首"],
            "cabin_nav_to": ["不走高速"]}
    for intent, texts in said.items():
        for text in texts:
            assert rewrite(text, current_intent=intent, memory=memory).applied, text
            assert may_rewrite(text), text
    assert not may_rewrite("把空调调到二十二度然后播放音乐") and not may_rewrite("打开车窗")


def test_start_on_arrival_off_waits_for_the_session() -> None:
    settings = base_settings()
    rig = Rig(settings=settings.model_copy(update={"models": settings.models.model_copy(update={"start_on_arrival": False})}))
    assert rig.engine.understand_ahead("打开车窗", rig.engine.deadline("text")) is None and rig.models.requests == []
