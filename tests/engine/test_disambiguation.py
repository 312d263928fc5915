"""A disambiguation that converges: unsure routing settled by the request's own words, a question that offers its
options, and an answer that either names one or gives what the request lacked (timeflow pack, scripted models)."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

from engine.session import SessionStatus
from protocol.http_chat import ChatRequest, FillSlotsRequest, TurnStatus
from tests.support.fakes import FakeModelClient, Rig

TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 12, 9, 9, 0, tzinfo=TZ)  # a Wednesday
UNSURE = [("schedule_query", 0.40), ("replan", 0.38), ("schedule_create", 0.37)]


def rig(*texts: str, unsure: list[tuple[str, float]] = UNSURE, sure: dict[str, str] | None = None) -> Rig:
    """Every text routed unsure among `unsure` (close scores: fusion asks), except those `sure` names."""
    fake = FakeModelClient()
    for text in texts:
        fake.on(text, classifier=unsure, retriever=unsure)
    for text, intent in (sure or {}).items():
        fake.sure(text, intent)
    return Rig("timeflow", models=fake, clock=lambda: NOW)


async def chat(r: Rig, text: str):
    return await r.engine.chat(ChatRequest(user_id="u1", session_id="s1", text=text))


async def fill(r: Rig, text: str | None = None, slots: dict | None = None):
    return await r.engine.fill_slots(FillSlotsRequest(user_id="u1", session_id="s1", text=text, slots=slots))


async def test_a_disambiguation_offers_its_options():
    text = "和房东见面的事"
    asked = await chat(rig(text), text)
    assert asked.status == TurnStatus.clarify
    assert [(o.value, o.label) for o in asked.options] == [
        ("schedule_query", "查询日程"),
        ("replan", "重新规划"),
        ("schedule_create", "新建日程"),
    ]
    assert asked.reply == "您是想查询日程还是重新规划还是新建日程？"


async def test_an_answer_that_gives_the_missing_time_settles_it_as_the_option_that_lacked_it():
    text = "和房东见面的事"
    r = rig(text, f"{text}，后天上午十点", "后天上午十点")
    await chat(r, text)
    answered = await fill(r, "后天上午十点")
    assert answered.status == TurnStatus.decided
    assert (answered.decision.agent, answered.decision.function) == ("schedule_todo_agent", "create")
    assert datetime.fromisoformat(answered.decision.time_range.start) == datetime(2026, 12, 11, 10, tzinfo=TZ)


async def test_an_answer_naming_an_option_runs_the_request_as_that_intent():
    text = "和房东见面的事"
    r = rig(text)
    await chat(r, text)
    chosen = await fill(r, "新建日程")
    assert chosen.status == TurnStatus.waiting_slot and chosen.intent == "schedule_create"
    assert chosen.reply == "打算安排在什么时候？"
    booked = await fill(r, "后天上午十点")
    assert booked.status == TurnStatus.decided and booked.decision.function == "create"


async def test_an_option_chosen_by_its_id_or_its_place():
    text = "和房东见面的事"
    for answer, slots, intent in (("", {"intent": "replan"}, "replan"), ("第一个", None, "schedule_query")):
        r = rig(text)
        await chat(r, text)
        chosen = await fill(r, answer or None, slots)
        assert chosen.status == TurnStatus.decided and chosen.intent == intent


async def test_an_answer_that_is_a_request_of_its_own_is_a_new_turn():
    text = "和房东见面的事"
    r = rig(text, sure={"明天有什么安排": "schedule_query"})
    await chat(r, text)
    new = await fill(r, "明天有什么安排")
    assert new.status == TurnStatus.decided and new.intent == "schedule_query"


async def test_an_answer_that_settles_nothing_asks_again_with_the_options_and_a_stop_ends_it():
    text = "和房东见面的事"
    r = rig(text)
    await chat(r, text)
    again = await fill(r, "嗯嗯")
    assert again.status == TurnStatus.clarify and len(again.options) == 3
    stopped = await fill(r, "算了")
    assert stopped.status == TurnStatus.stopped
    assert (await r.store.load("s1")).asked is None


async def test_a_new_message_leaves_the_question_unanswered():
    text = "和房东见面的事"
    r = rig(text, sure={"明天有什么安排": "schedule_query"})
    await chat(r, text)
    await chat(r, "明天有什么安排")
    state = await r.store.load("s1")
    assert state.asked is None and state.status == SessionStatus.decided


async def test_arrange_said_settles_unsure_routing_as_a_new_item():
    """安排 asks to create: an unsure routing among query, replan and create asks for the time, not which."""
    text = "帮我安排一个和房东见面的事"
    asked = await chat(rig(text), text)
    assert asked.status == TurnStatus.waiting_slot and asked.intent == "schedule_create"
    assert asked.reply == "打算安排在什么时候？" and asked.options == []


async def test_two_cues_at_once_settle_nothing():
    text = "帮我安排一下这周剩下的事"  # 安排 (a new item) and 剩下的 (what is left: a replan)
    asked = await chat(rig(text), text)
    assert asked.status == TurnStatus.clarify


async def test_a_goal_with_a_horizon_of_weeks_is_a_long_task_split_not_a_question():
    text = "我想这个月把雅思准备好"
    asked = await chat(rig(text, unsure=[("long_task_split", 0.41), ("review", 0.40)]), text)
    assert asked.status == TurnStatus.decided
    assert (asked.decision.agent, asked.decision.function) == ("long_task_split_agent", "split")


async def test_a_cue_settles_a_weak_out_of_scope_reading_and_a_done_thing_is_feedback():
    text = "安排个时间带狗去打疫苗"
    unsure = [("__out_of_scope__", 0.45), ("schedule_create", 0.2), ("replan", 0.15)]
    asked = await chat(rig(text, unsure=unsure), text)
    assert asked.status == TurnStatus.waiting_slot and asked.intent == "schedule_create"
    text = "上周五的周会我参加了"  # feedback is fifth among the candidates: the cue still names it
    unsure = [("schedule_query", 0.4), ("schedule_create", 0.3), ("schedule_update", 0.2), ("feedback_record", 0.05)]
    done = await chat(rig(text, unsure=unsure), text)
    assert done.status == TurnStatus.decided and done.intent == "feedback_record"


async def test_a_request_cue_outranks_even_a_sure_out_of_scope_reading_and_the_time_is_asked():
    """帮我约一下… asks for a new item however strange the thing is to the models: the time is asked, not refused,
    and the answer with the time books it under the words the user gave it."""
    text = "帮我约一下和理发师的见面"
    fake = FakeModelClient().sure(text, "__out_of_scope__")
    r = Rig("timeflow", models=fake, clock=lambda: NOW)
    asked = await chat(r, text)
    assert asked.status == TurnStatus.waiting_slot and asked.intent == "schedule_create"
    assert asked.reply == "打算安排在什么时候？"
    booked = await fill(r, "下周二下午四点")
    assert booked.status == TurnStatus.decided and booked.decision.function == "create"
    assert datetime.fromisoformat(booked.decision.time_range.start) == datetime(2026, 12, 15, 16, tzinfo=TZ)


async def test_a_sure_out_of_scope_reading_without_one_cue_is_still_refused():
    for text in ("帮我写一首关于冬天的诗", "帮我安排一下这周剩下的事"):  # no cue; two cues (安排, 剩下的)
        fake = FakeModelClient().sure(text, "__out_of_scope__")
        refused = await chat(Rig("timeflow", models=fake, clock=lambda: NOW), text)
        assert refused.status == TurnStatus.rejected, text


async def test_a_goal_horizon_outranks_a_sure_reading_as_one_dated_item():
    text = "我打算下个月中旬之前把驾校科目二练好"
    fake = FakeModelClient().sure(text, "schedule_create")
    decided = await chat(Rig("timeflow", models=fake, clock=lambda: NOW), text)
    assert decided.status == TurnStatus.decided and decided.intent == "long_task_split"
    assert (decided.decision.agent, decided.decision.function) == ("long_task_split_agent", "split")


async def test_a_create_cue_keeps_a_sure_create_although_a_horizon_is_said():
    for text, sure in (("帮我安排下个月三号把车险续好", "schedule_create"), ("我想这个月把雅思准备好", "review")):
        fake = FakeModelClient().sure(text, sure)
        decided = await chat(Rig("timeflow", models=fake, clock=lambda: NOW), text)
        assert decided.intent == sure, text  # its own cue said; or no cues_over for the routed intent


async def test_a_goal_with_its_hours_is_one_request_not_a_multi_intent_decision():
    text = "我想三个月内练出腹肌，每周能练三个小时"
    fake = FakeModelClient().sure(text, "long_task_split", detector=[("long_task_split", 0.99), ("review", 0.97)])
    decided = await chat(Rig("timeflow", models=fake, clock=lambda: NOW), text)
    assert decided.status == TurnStatus.decided and decided.decision.agent == "long_task_split_agent"
    assert decided.decision.function == "split"


async def test_two_requests_cued_stay_a_multi_intent_decision():
    text = "跑步完成了，帮我复盘这周"
    fake = FakeModelClient().sure(text, "feedback_record", detector=[("feedback_record", 0.99), ("review", 0.97)])
    decided = await chat(Rig("timeflow", models=fake, clock=lambda: NOW), text)
    assert decided.multi_intent and decided.decision.agent is None


def test_the_cues_of_a_new_item():
    from engine.cues import RequestCues
    from tests.support.fakes import pack

    cues = RequestCues(pack("timeflow"))
    for said in ("帮我约一个和HR的面谈", "帮我排一下跟客户的电话会", "安排个时间带狗去打疫苗", "帮我记个事"):
        assert cues.said(said) == {"schedule_create"}, said
    assert "schedule_create" not in cues.said("帮我排一下明天的计划")
    assert "schedule_create" not in cues.said("明天有什么安排")


def test_the_cues_of_a_replan_of_what_was_left_and_of_a_goal_with_its_weekly_hours():
    from engine.cues import RequestCues
    from tests.support.fakes import pack

    cues = RequestCues(pack("timeflow"))
    for said in ("周三拖下来的事帮我重新弄一下", "上周落下的任务往后顺一顺", "把剩下的活往后顺"):
        assert cues.said(said) == {"replan"}, said
    for said in ("开学前把吉他学会，每周投入五个小时", "春节之前读完三本书，每天花一小时"):
        assert cues.said(said) == {"long_task_split"}, said
    assert "replan" not in cues.said("明天下午去拿快递")


async def test_a_goal_with_its_weekly_hours_is_a_split_not_a_question():
    text = "开学前把吉他学会，每周投入五个小时"
    asked = await chat(rig(text, unsure=[("long_task_split", 0.41), ("schedule_create", 0.40)]), text)
    assert asked.status == TurnStatus.decided
    assert (asked.decision.agent, asked.decision.function) == ("long_task_split_agent", "split")


async def test_calling_an_item_off_or_moving_what_was_left_outranks_a_sure_feedback_reading():
    for text, intent in (("后天的网球课不打了", "schedule_delete"), ("今天没干完的都顺延到明天", "replan")):
        fake = FakeModelClient().sure(text, "feedback_record", detector=[("feedback_record", 0.98), (intent, 0.9)])
        decided = await chat(Rig("timeflow", models=fake, clock=lambda: NOW), text)
        assert decided.status == TurnStatus.decided and decided.intent == intent, text
        assert decided.workflow is None and decided.decision.agent is not None, text  # one agent's request
    said_done = "昨天的网球课没去"  # feedback's own cue: the sure reading stands
    fake = FakeModelClient().sure(said_done, "feedback_record")
    assert (await chat(Rig("timeflow", models=fake, clock=lambda: NOW), said_done)).intent == "feedback_record"


def test_the_cues_of_a_span_of_the_clock_and_of_calling_off():
    from engine.cues import RequestCues
    from tests.support.fakes import pack

    cues = RequestCues(pack("timeflow"))
    for said in ("周四晚上七点到八点半和家人视频", "帮我约一次年检"):
        assert cues.said(said) == {"schedule_create"}, said
    for said in ("下午三点到五点有什么安排", "三点到四点的会改到五点", "两点到三点那个取消"):
        assert "schedule_create" not in cues.said(said), said
    assert cues.said("周日的聚餐不约了") == {"schedule_delete"}
    assert "review" not in cues.said("周五交季度总结")


async def test_two_intents_detected_and_one_cued_is_that_ones_request():
    text = "上周没写完的帮我放到后面"
    unsure = [("replan", 0.6), ("schedule_update", 0.5)]  # known, below the execute threshold
    fake = FakeModelClient().on(
        text, classifier=unsure, retriever=unsure, detector=[("replan", 0.98), ("schedule_update", 0.9)]
    )
    decided = await chat(Rig("timeflow", models=fake, clock=lambda: NOW), text)
    assert decided.status == TurnStatus.decided and decided.intent == "replan"
    assert decided.workflow is None and decided.decision.agent == "replan_agent"


def test_a_cue_that_outranks_another_said_beside_it_is_the_one_said():
    """`rules.cues_over` one way: a deletion over feedback (…租出去了 ends like 去了), a goal's plan over an errand
    (装修 holds 修), a move or a review over a look at the calendar; a replan and feedback outrank each other, so both
    said stay two."""
    from engine.cues import RequestCues
    from tests.support.fakes import pack

    cues = RequestCues(pack("timeflow"))
    assert cues.said("周六那节试听课取消掉，名额已经让出去了") == {"schedule_delete"}
    assert cues.said("年底前要把老房子翻修好，每周能花六个小时，帮我出个计划") == {"long_task_split"}
    assert cues.said("复盘一下这个月，看看哪些没做") == {"review"}
    assert cues.said("周四的例会推迟半小时") == {"schedule_update"}
    assert cues.said("没做完的往后顺一顺，跑步没去") == {"replan", "feedback_record"}


def test_the_cues_of_a_move_of_a_plan_asked_for_and_of_what_is_only_reported():
    from engine.cues import RequestCues
    from tests.support.fakes import pack

    cues = RequestCues(pack("timeflow"))
    for said in ("周三的牙医改到周五下午", "明早的晨会提前二十分钟", "体检往后推一天", "饭局晚一个小时"):
        assert cues.said(said) == {"schedule_update"}, said
    assert cues.over("周二那个会后来改到几点了", "schedule_query") is None  # a question of when: a look stays
    assert cues.said("三个月内学会剪视频，帮我定一份学习计划") == {"long_task_split"}
    assert "long_task_split" not in cues.said("帮我给明天做个计划")
    # what is left or half done, said as a report: feedback, no replan; 哪些没做 asks which
    assert cues.said("周报只写了一半，剩下的还没动") == {"feedback_record"}
    assert "feedback_record" not in cues.said("看看上周哪些没做")
    assert "schedule_create" not in cues.said("昨天拖下的事，重新帮我排一排")


def test_a_clause_that_reports_what_someone_said_cues_nothing_beside_a_request():
    from engine.cues import RequestCues
    from tests.support.fakes import pack

    cues = RequestCues(pack("timeflow"))
    assert cues.said("周四的聚餐删了吧，组长说改到下周") == {"schedule_delete"}
    assert cues.said("组长说饭局挪到月底") == {"schedule_update"}  # the only clause: it is the request
    assert cues.said("周四的聚餐删了吧，跟组长说一声") == {"schedule_delete"}


async def test_a_sure_route_the_words_do_not_cue_yields_to_the_one_request_cued_and_detected():
    """Fusion reads the state beside the request (屏幕裂了) as a deletion; the words ask for a new item only, and the
    detector read that too: the time of the new item is asked."""
    text = "找个时间去换一下手机屏幕，屏幕早就裂了"
    detected = [("schedule_delete", 0.99), ("schedule_query", 0.7), ("schedule_create", 0.55)]
    fake = FakeModelClient().sure(text, "schedule_delete", detector=detected)
    asked = await chat(Rig("timeflow", models=fake, clock=lambda: NOW), text)
    assert asked.status == TurnStatus.waiting_slot and asked.intent == "schedule_create"
    text = "周六的羽毛球取消吧，找个时间再约"  # its own cue said: the sure route stands
    fake = FakeModelClient().sure(text, "schedule_delete", detector=detected)
    decided = await chat(Rig("timeflow", models=fake, clock=lambda: NOW), text)
    assert decided.intent != "schedule_create"


async def test_a_move_said_outranks_a_sure_look_at_the_calendar():
    text = "周六陪孩子打疫苗那个提前两天"
    fake = FakeModelClient().sure(text, "schedule_query")
    decided = await chat(Rig("timeflow", models=fake, clock=lambda: NOW), text)
    assert decided.intent == "schedule_update"
