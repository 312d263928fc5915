"""Turn flows through TurnEngine with the real cockpit/timeflow packs and a scripted fake ModelClient."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from config.budgets import STAGES
from engine.plugins import World
from engine.session import SessionStatus
from protocol.http_chat import ChatRequest, ChatResponse, FillSlotsRequest, TurnStatus
from tests.support.fakes import FakeModelClient, Rig

TZ = ZoneInfo("Asia/Shanghai")
ROUTED = {"keyword", "encoder", "classifier", "retriever", "detector", "fusion", "commit"}
ORDER = "A12345"  # OrderBackend derives pending_shipment for this id (asserted below)


def chat(rig: Rig, text: str, *, session: str = "s1", user: str = "u1"):
    return rig.engine.chat(ChatRequest(user_id=user, session_id=session, text=text))


def fill(rig: Rig, *, text: str | None = None, slots: dict | None = None, session: str = "s1", user: str = "u1"):
    return rig.engine.fill_slots(FillSlotsRequest(user_id=user, session_id=session, text=text, slots=slots))


def check_timings(rig: Rig, resp: ChatResponse, *, routed: bool = True) -> None:
    t = resp.timings
    assert set(t.stages) <= set(STAGES), f"non-canonical stage names: {set(t.stages) - set(STAGES)}"
    assert "commit" in t.stages
    if routed:
        assert ROUTED <= set(t.stages)
    assert t.budget_ms == rig.settings.budgets.turn_ms["text"]
    assert 0 < t.total_ms < t.budget_ms
    assert all(v >= 0 for v in t.stages.values())
    assert t.degraded == []


async def stored(rig: Rig, session: str = "s1"):
    state = await rig.store.load(session)
    assert state is not None
    return state


# --------------------------------------------------------------------------- cabin control


async def test_open_then_close_window_changes_vehicle_state() -> None:
    fake = FakeModelClient().sure("打开车窗", "cabin_window_open").sure("关窗", "cabin_window_close")
    rig = Rig(models=fake)
    assert rig.vehicle("u1").window_open is False

    opened = await chat(rig, "打开车窗")
    assert opened.status == TurnStatus.completed and opened.intent == "cabin_window_open"
    assert rig.vehicle("u1").window_open is True
    assert opened.result and opened.result["success"] and opened.result["plugin"] == "plugin.cabin.window.open"
    assert opened.routing_debug.fusion.decision == "execute"
    check_timings(rig, opened)
    assert "execute" in opened.timings.stages

    closed = await chat(rig, "关窗")
    assert closed.status == TurnStatus.completed and closed.intent == "cabin_window_close"
    assert rig.vehicle("u1").window_open is False
    check_timings(rig, closed)
    state = await stored(rig)
    assert state.status == SessionStatus.completed and state.turns == 2
    assert state.last_user_text == "关窗" and state.last_agent_text == closed.reply
    # another user's car is untouched
    assert rig.vehicle("u2").window_open is False
    assert fake.texts("classifier") == ["打开车窗", "关窗"]


async def test_new_session_id_is_generated_when_missing() -> None:
    rig = Rig(models=FakeModelClient().sure("打开车窗", "cabin_window_open"))
    resp = await rig.engine.chat(ChatRequest(user_id="u1", text="打开车窗"))
    assert resp.session_id
    assert (await rig.store.load(resp.session_id)).user_id == "u1"


async def test_rewritten_follow_up_sets_the_temperature() -> None:
    fake = FakeModelClient().sure("空调调到22度", "cabin_set_ac").sure("把空调调到24度", "cabin_set_ac")
    rig = Rig(models=fake)
    first = await chat(rig, "空调调到22度")
    assert first.status == TurnStatus.completed and first.slots == {"temperature": 22}
    assert rig.vehicle("u1").temperature == 22.0

    again = await chat(rig, "再调高两度")
    rw = again.routing_debug.rewrite
    assert rw.applied and rw.original_text == "再调高两度" and rw.rewritten_text == "把空调调到24度"
    assert fake.texts("classifier")[-1] == "把空调调到24度", "routing must see the rewritten text"
    assert again.status == TurnStatus.completed and again.slots == {"temperature": 24}
    assert rig.vehicle("u1").temperature == 24.0
    assert (await stored(rig)).memory["last_temperature"] == 24


# --------------------------------------------------------------------------- navigation / slots


async def test_navigation_waits_for_destination_then_fill_slots_text_completes() -> None:
    rig = Rig(models=FakeModelClient().sure("导航", "cabin_nav_to"))
    asked = await chat(rig, "导航")
    assert asked.status == TurnStatus.waiting_slot and asked.intent == "cabin_nav_to"
    assert asked.pending_slots == ["destination"]
    assert asked.reply == "您要去哪里？"
    check_timings(rig, asked)
    state = await stored(rig)
    assert state.status == SessionStatus.waiting_slot and state.pending_slots == ["destination"]

    done = await fill(rig, text="去公司")
    assert done.status == TurnStatus.completed and done.intent == "cabin_nav_to"
    assert done.slots == {"destination": "公司"} and done.pending_slots == []
    assert rig.vehicle("u1").destination == "公司"
    assert done.result["data"] == {"destination": "公司"}
    check_timings(rig, done, routed=False)
    state = await stored(rig)
    assert state.status == SessionStatus.completed and state.memory["last_destination"] == "公司"


async def test_navigation_destination_answered_in_chat() -> None:
    rig = Rig(models=FakeModelClient().sure("导航", "cabin_nav_to"))
    assert (await chat(rig, "导航")).status == TurnStatus.waiting_slot
    done = await chat(rig, "去公司")  # the models know nothing about this text: the pending slot absorbs it
    assert done.status == TurnStatus.completed and done.slots == {"destination": "公司"}
    assert rig.vehicle("u1").destination == "公司"


async def test_fill_slots_with_explicit_slot_values() -> None:
    rig = Rig(models=FakeModelClient().sure("导航", "cabin_nav_to"))
    await chat(rig, "导航")
    calls = len(rig.models.calls)
    done = await fill(rig, slots={"destination": "公司"})
    assert done.status == TurnStatus.completed and done.slots == {"destination": "公司"}
    assert rig.vehicle("u1").destination == "公司"
    assert len(rig.models.calls) == calls, "fill-slots must not route through the models"


async def test_fill_slots_on_unknown_session_falls_back() -> None:
    rig = Rig()
    resp = await fill(rig, text="去公司", session="nope")
    assert resp.status == TurnStatus.fallback and resp.intent is None
    assert resp.reply == rig.pack.responses["fallback"]
    assert resp.routing_debug.fusion is None
    assert rig.models.calls == []
    assert rig.vehicle("u1").destination is None


async def test_fill_slots_without_an_active_task_falls_back() -> None:
    rig = Rig(models=FakeModelClient().sure("打开车窗", "cabin_window_open"))
    await chat(rig, "打开车窗")
    resp = await fill(rig, slots={"destination": "公司"})
    assert resp.status == TurnStatus.fallback
    assert rig.vehicle("u1").destination is None


async def test_greeting_while_waiting_for_a_slot_keeps_the_task() -> None:
    rig = Rig(models=FakeModelClient().sure("导航", "cabin_nav_to"))
    await chat(rig, "导航")
    hi = await chat(rig, "你好")
    assert hi.status == TurnStatus.social and hi.intent == "__social__"
    assert hi.reply.startswith(rig.pack.responses["social_greeting"]) and "导航去目的地" in hi.reply
    assert (await stored(rig)).status == SessionStatus.waiting_slot
    done = await fill(rig, text="去公司")
    assert done.status == TurnStatus.completed


@pytest.mark.parametrize("word", ["停止", "算了", "不用了"])
async def test_stop_word_during_waiting_slot_stops_the_task(word: str) -> None:
    rig = Rig(models=FakeModelClient().sure("导航", "cabin_nav_to"))
    await chat(rig, "导航")
    resp = await chat(rig, word)
    assert resp.status == TurnStatus.stopped, f"{word!r} is a configured stop word"
    assert resp.reply == rig.pack.responses["stopped"]
    state = await stored(rig)
    assert state.status == SessionStatus.stopped
    assert state.current_intent is None and state.slots == {} and state.pending_slots == []
    assert rig.vehicle("u1").destination is None


@pytest.mark.parametrize("word", ["停止", "算了", "不用了"])
async def test_stop_word_via_fill_slots_stops_instead_of_filling(word: str) -> None:
    rig = Rig(models=FakeModelClient().sure("导航", "cabin_nav_to"))
    await chat(rig, "导航")
    resp = await fill(rig, text=word)
    assert resp.status == TurnStatus.stopped, (
        f"{word!r} is a configured stop word; got {resp.status.value}, navigating to {rig.vehicle('u1').destination!r}"
    )
    assert rig.vehicle("u1").destination is None, f"navigated to {rig.vehicle('u1').destination!r}"
    assert (await stored(rig)).status == SessionStatus.stopped


# --------------------------------------------------------------------------- confirmation


def test_order_fixture_is_pending_shipment() -> None:
    assert World().order_status(ORDER) == "pending_shipment"


async def test_cancel_order_asks_for_confirmation_then_confirm_completes() -> None:
    text = f"取消订单{ORDER}"
    rig = Rig(models=FakeModelClient().sure(text, "cs_cancel_order"))
    ask = await chat(rig, text)
    assert ask.status == TurnStatus.waiting_confirmation and ask.intent == "cs_cancel_order"
    assert ask.slots == {"order_id": ORDER}
    assert "确认" in ask.reply
    assert (await stored(rig)).status == SessionStatus.waiting_confirmation
    assert rig.worlds.world("u1").order_status(ORDER) == "pending_shipment", "nothing runs before the confirmation"

    calls = len(rig.models.calls)
    done = await chat(rig, "确认")
    assert len(rig.models.calls) == calls, "a confirmation answer is not routed"
    assert done.status == TurnStatus.completed and done.intent == "cs_cancel_order"
    assert done.result["success"] is True and done.result["data"]["order_status"] == "cancelled"
    assert rig.worlds.world("u1").order_status(ORDER) == "cancelled"
    assert done.reply == f"订单{ORDER}已成功取消。"
    check_timings(rig, done, routed=False)


async def test_cancel_order_declined_stops_without_cancelling() -> None:
    text = f"取消订单{ORDER}"
    rig = Rig(models=FakeModelClient().sure(text, "cs_cancel_order"))
    await chat(rig, text)
    no = await chat(rig, "不要")
    assert no.status == TurnStatus.stopped and no.result is None
    assert no.reply == "好的，不取消订单了。"
    assert rig.worlds.world("u1").order_status(ORDER) == "pending_shipment"
    state = await stored(rig)
    assert state.status == SessionStatus.stopped and state.current_intent is None and state.slots == {}


async def test_unclear_confirmation_answer_asks_again() -> None:
    text = f"取消订单{ORDER}"
    rig = Rig(models=FakeModelClient().sure(text, "cs_cancel_order"))
    await chat(rig, text)
    again = await chat(rig, "明天再说吧")
    assert again.status == TurnStatus.waiting_confirmation
    assert rig.worlds.world("u1").order_status(ORDER) == "pending_shipment"
    assert (await chat(rig, "确定")).status == TurnStatus.completed


# --------------------------------------------------------------------------- timeflow (agent decisions)


@pytest.mark.parametrize(
    "clock",
    [
        lambda: datetime(2026, 11, 30, 10, 0, tzinfo=TZ),
        lambda: datetime(2026, 11, 30, 2, 0, tzinfo=UTC),  # the same instant in UTC: converted to the user zone
        lambda: datetime(2026, 11, 29, 22, 0, tzinfo=UTC),  # still 11-29 in UTC, already 11-30 06:00 in Shanghai
    ],
)
async def test_timeflow_schedule_create_is_decided_for_the_agent(clock) -> None:
    text = "明天下午三点提醒我开会"
    rig = Rig("timeflow", models=FakeModelClient().sure(text, "schedule_create"), clock=clock)
    resp = await chat(rig, text)
    assert resp.status == TurnStatus.decided and resp.intent == "schedule_create"
    d = resp.decision
    assert d is not None
    assert d.intents == ["schedule_create"]
    assert d.agent == "schedule_todo_agent" and d.function == "create"
    assert d.time_range is not None
    start = datetime.fromisoformat(d.time_range.start)
    assert start == datetime(2026, 12, 1, 15, 0, tzinfo=TZ)
    assert start.utcoffset() == timedelta(hours=8)
    assert d.time_range.start.startswith("2026-12-01T15:00")
    assert datetime.fromisoformat(d.time_range.end) == datetime(2026, 12, 1, 16, 0, tzinfo=TZ)
    assert d.time_range.all_day is False and "明天下午三点" in d.time_range.text
    assert d.params["when"]["start"] == d.time_range.start
    assert resp.result is None
    assert "schedule_todo_agent" in resp.reply
    assert (await stored(rig)).status == SessionStatus.decided
    check_timings(rig, resp)


# --------------------------------------------------------------------------- multi-intent, social, out of scope


async def test_two_commands_joined_by_then_run_as_a_workflow_in_the_order_said() -> None:
    text = "打开车窗然后播放音乐"
    fake = FakeModelClient().on(
        text,
        classifier=[("cabin_window_open", 0.5), ("cabin_play_music", 0.4)],
        retriever=[("cabin_window_open", 0.6), ("cabin_play_music", 0.55)],
        detector=[("cabin_window_open", 0.93), ("cabin_play_music", 0.88), ("cabin_window_close", 0.1)],
    )
    fake.on("打开车窗", classifier=[("cabin_window_open", 0.9)]).on("播放音乐", classifier=[("cabin_play_music", 0.9)])
    rig = Rig(models=fake)
    resp = await chat(rig, text)
    assert resp.status == TurnStatus.completed
    assert resp.multi_intent is True
    assert resp.workflow is not None and resp.workflow.type == "sequence"
    assert [(s.intent_id, s.status) for s in resp.workflow.steps] == [
        ("cabin_window_open", "done"),
        ("cabin_play_music", "done"),
    ]
    assert resp.routing_debug.planner.trigger == "connective"
    v = rig.vehicle("u1")
    assert v.window_open is True and v.music_playing is True
    assert resp.reply == "好，车窗已经打开了，开始播放音乐。"
    assert (await stored(rig)).status == SessionStatus.completed
    check_timings(rig, resp)
    assert "planner" in resp.timings.stages


async def test_single_clause_needs_the_higher_detector_threshold() -> None:
    text = "打开车窗播放音乐"
    fake = FakeModelClient().on(
        text,
        classifier=[("cabin_window_open", 0.9), ("cabin_play_music", 0.05)],
        detector=[("cabin_window_open", 0.8), ("cabin_play_music", 0.8)],
    )
    rig = Rig(models=fake)
    resp = await chat(rig, text)
    assert resp.multi_intent is False and resp.detected_intents == []
    assert resp.status == TurnStatus.completed and resp.intent == "cabin_window_open"


async def test_greeting_is_social_without_routing() -> None:
    rig = Rig()
    resp = await chat(rig, "你好")
    assert resp.status == TurnStatus.social and resp.intent == "__social__"
    assert resp.reply == rig.pack.responses["social_greeting"]
    assert rig.models.calls == []
    assert (await stored(rig)).status == SessionStatus.social
    check_timings(rig, resp, routed=False)


async def test_social_top_from_models_is_chitchat() -> None:
    text = "今天心情不错"
    rig = Rig(models=FakeModelClient().sure(text, "__social__"))
    resp = await chat(rig, text)
    assert resp.status == TurnStatus.social and resp.intent == "__social__"
    assert resp.reply == rig.pack.responses["social_chitchat"]


async def test_out_of_scope_top_is_rejected() -> None:
    text = "帮我订一张机票"
    fake = FakeModelClient().on(
        text, classifier=[("__out_of_scope__", 0.95), ("cabin_nav_to", 0.02)], retriever=[("__out_of_scope__", 0.8)]
    )
    rig = Rig(models=fake)
    resp = await chat(rig, text)
    assert resp.status == TurnStatus.rejected and resp.intent == "__out_of_scope__"
    assert resp.reply == rig.pack.responses["reject"]
    assert resp.result is None and resp.decision is None
    assert (await stored(rig)).status == SessionStatus.idle
    check_timings(rig, resp)


async def test_low_scores_are_rejected() -> None:
    text = "嗯那个什么"
    rig = Rig(models=FakeModelClient().on(text, classifier=[("cabin_window_open", 0.2)]))
    resp = await chat(rig, text)
    assert resp.status == TurnStatus.rejected
    assert resp.routing_debug.fusion.decision == "reject"
    assert rig.vehicle("u1").window_open is False


async def test_weak_known_candidate_is_asked_about_not_refused() -> None:
    """Below route_to_cloud but above clarify_floor: a task intent gets a clarify question, nothing executes."""
    text = "车里好闷能不能透透气"
    rig = Rig(
        models=FakeModelClient().on(
            text, classifier=[("cabin_window_open", 0.35)], retriever=[("cabin_window_open", 0.3)]
        )
    )
    resp = await chat(rig, text)
    assert resp.routing_debug.fusion.decision == "reject"
    assert (
        rig.settings.fusion.clarify_floor
        <= resp.routing_debug.fusion.top_score
        < rig.settings.fusion.route_to_cloud_threshold
    )
    assert resp.status == TurnStatus.clarify and resp.intent == "cabin_window_open"
    assert "打开车窗" in resp.reply
    assert rig.vehicle("u1").window_open is False


async def test_close_candidates_ask_to_clarify() -> None:
    text = "打开那个窗"
    fake = FakeModelClient().on(
        text,
        classifier=[("cabin_window_open", 0.45), ("cabin_sunroof_open", 0.42)],
        retriever=[("cabin_window_open", 0.45), ("cabin_sunroof_open", 0.44)],
    )
    rig = Rig(models=fake)
    resp = await chat(rig, text)
    assert resp.status == TurnStatus.clarify
    assert resp.reply == "您是想打开车窗还是打开天窗？"
    v = rig.vehicle("u1")
    assert v.window_open is False and v.sunroof_open is False


async def test_half_degree_follow_up_in_a_turn() -> None:
    """再高半度 after setting 22 度 must set 22.5 度, not crash the turn (see test_rewrite.test_ac_half_degree_step)."""
    fake = FakeModelClient().sure("空调调到22度", "cabin_set_ac").sure("把空调调到22.5度", "cabin_set_ac")
    rig = Rig(models=fake)
    await chat(rig, "空调调到22度")
    resp = await chat(rig, "再高半度")
    assert resp.status == TurnStatus.completed and resp.slots == {"temperature": 22.5}
    assert rig.vehicle("u1").temperature == 22.5


async def test_replying_cancel_as_the_prompt_suggests_declines() -> None:
    """The confirm prompt says 请回复“确认”或“取消”, so 取消 must decline (not re-ask forever)."""
    text = f"取消订单{ORDER}"
    rig = Rig(models=FakeModelClient().sure(text, "cs_cancel_order"))
    ask = await chat(rig, text)
    assert "“取消”" in ask.reply
    resp = await chat(rig, "取消")
    assert resp.status == TurnStatus.stopped, f"got {resp.status.value}: {resp.reply}"
    assert rig.worlds.world("u1").order_status(ORDER) == "pending_shipment"


async def test_decided_without_an_agent_answers_in_the_intents_own_words() -> None:
    text = "最近压力好大什么都不想做"
    rig = Rig("timeflow", models=FakeModelClient().sure(text, "emotion_support"))
    resp = await chat(rig, text)
    assert resp.status == TurnStatus.decided and resp.decision.agent is None
    assert resp.reply == rig.pack.intent("emotion_support").reply


async def test_a_single_intent_turn_names_its_module_as_seed_000s_pipeline_and_an_unplaced_one_none():
    text, unknown = "后天上午十点半去银行办卡", "今天月亮圆不圆"
    rig = Rig("timeflow", models=FakeModelClient().sure(text, "schedule_create").sure("我好焦虑", "emotion_support"))
    decided = await rig.engine.chat(ChatRequest(user_id="u", text=text))
    assert decided.status == TurnStatus.decided and decided.workflow is None
    assert decided.pipeline == ["Scheduling"] and decided.pipeline_description == "新建日程。"
    feeling = await rig.engine.chat(ChatRequest(user_id="u", text="我好焦虑"))
    assert feeling.pipeline == ["EmotionSupport"]
    unplaced = await rig.engine.chat(ChatRequest(user_id="u", text=unknown))
    assert unplaced.status in (TurnStatus.fallback, TurnStatus.rejected)
    assert unplaced.pipeline == [] and unplaced.pipeline_description is None
