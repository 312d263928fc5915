"""When to plan, the one clause split, clause analysis and the executor's conditions (no models)."""

from __future__ import annotations

import pytest

from engine.clauses import ClauseSplitter
from engine.keyword import KeywordMatcher
from engine.workflow.analysis import ClauseAnalyzer
from engine.workflow.executor import condition_holds
from engine.workflow.trigger import PlanTrigger
from protocol.workflow import StepCondition
from tests.support.fakes import base_settings, pack


def trigger(name: str = "cockpit") -> tuple[PlanTrigger, ClauseSplitter]:
    settings = base_settings()
    p = pack(name)
    return PlanTrigger(settings.planner, KeywordMatcher(p), ClauseAnalyzer(p, settings.planner)), ClauseSplitter(
        settings.clauses
    )


@pytest.mark.parametrize(
    "text,clauses,reason",
    [
        ("打开车窗然后把空调调到22度", ["打开车窗", "把空调调到22度"], "connective"),
        ("先开窗再开空调", ["开窗", "开空调"], "connective"),
        ("先打开车窗后开空调", ["打开车窗", "开空调"], "connective"),
        ("打开车窗并播放音乐", ["打开车窗", "播放音乐"], "connective"),
        ("查一下订单A12345，如果还没发货就帮我取消", ["查一下订单A12345", "如果还没发货就帮我取消"], "condition"),
        ("开空调，关窗", ["开空调", "关窗"], "clauses"),
        ("打开车窗和天窗", ["打开车窗和天窗"], "parallel"),
    ],
)
def test_the_words_that_ask_for_a_plan(text, clauses, reason):
    plan, split = trigger()
    assert split.clauses(text) == clauses
    assert plan.lexical(text, split.clauses(text)) == reason


@pytest.mark.parametrize(
    "text",
    [
        "先把后视镜折叠",
        "后挡除雾打开",
        "后排窗户都打开",
        "先锋音乐放一首",
        "导航先关掉",  # 先 / 后 inside words
        "太热了，开下空调",
        "下雨了，把窗关了",  # a reason, then one request
        "空调风再大一点",
        "刚才那首再放一遍",
        "合并一下",
        "把音量调大",
    ],
)
def test_a_single_command_gives_no_reason_to_plan(text):
    plan, split = trigger()
    assert plan.lexical(text, split.clauses(text)) is None


@pytest.mark.parametrize("name", ["cockpit", "timeflow"])
def test_no_held_out_example_of_either_pack_is_marked_for_planning(name):
    """Every test_examples entry is one request: none carries a connective, a condition, keywords of two intents in
    two clauses or parallel requests. (With the real models, tests/engine/test_workflow_quality.py shows none of them
    is planned into a workflow either.)"""
    plan, split = trigger(name)
    marked = [t for i in pack(name).intents for t in i.test_examples if plan.lexical(t, split.clauses(t))]
    assert marked == []


def test_a_conditional_clause_is_scored_on_its_action_and_keeps_its_condition():
    settings = base_settings()
    analyzer = ClauseAnalyzer(pack("cockpit"), settings.planner)
    for clause, action, condition in [
        ("如果还没发货就帮我取消", "帮我取消", "还没发货"),
        ("没发货的话帮我取消", "帮我取消", "没发货"),
        ("要是还没发货就取消掉", "取消掉", "还没发货"),
    ]:
        assert analyzer.split_condition(clause) == (action, condition)
    scored = analyzer.analyze("如果还没发货就帮我取消订单", classifier=[], detector=[])
    assert scored.selected == ["cs_cancel_order"], "发货 in the condition is no logistics request"


def test_parallel_requests_in_one_clause_borrow_the_first_verb():
    analyzer = ClauseAnalyzer(pack("cockpit"), base_settings().planner)
    assert analyzer.parallel_requests("打开车窗和天窗") == ["cabin_sunroof_open"]
    assert analyzer.parallel_requests("打开车窗") == []
    assert analyzer.parallel_requests("和小王一起听歌") == []


def test_a_bare_verb_acts_on_the_clause_before_and_is_no_step_of_its_own():
    analyzer = ClauseAnalyzer(pack("cockpit"), base_settings().planner)
    from protocol.turn_debug import Candidate

    scored = analyzer.analyze("关掉", classifier=[Candidate(intent="cabin_ac_off", score=0.95)], detector=[])
    assert scored.selected == []


def test_a_clause_reporting_a_state_is_the_reason_and_no_step_of_its_own():
    analyzer = ClauseAnalyzer(pack("cockpit"), base_settings().planner)
    from protocol.turn_debug import Candidate

    for clause, read in [
        ("窗户开着呢", "cabin_window_open"),
        ("镜子是折叠状态", "cabin_mirror_fold"),
        ("天窗还是开着的", "cabin_sunroof_open"),
    ]:
        assert analyzer.analyze(clause, classifier=[Candidate(intent=read, score=0.97)], detector=[]).selected == []
    request = analyzer.analyze(
        "把窗户开着", classifier=[Candidate(intent="cabin_window_open", score=0.97)], detector=[]
    )
    assert request.selected == ["cabin_window_open"], "a request to keep it so is a request"
    query = analyzer.analyze(
        "看一下订单A12345的状态", classifier=[Candidate(intent="cs_query_order", score=0.97)], detector=[]
    )
    assert query.selected == ["cs_query_order"], "asking for a thing's state is a request"


@pytest.mark.parametrize(
    ("clause", "on", "selected"),
    [
        ("空调没必要开", "cabin_ac_on", "cabin_ac_off"),
        ("后座阅读灯不用亮着", "cabin_lights_on", "cabin_lights_off"),
        ("空调开大一点", "cabin_ac_on", "cabin_ac_on"),
        ("两边镜子给我掰开", "cabin_mirror_fold", "cabin_mirror_unfold"),  # the side its words name
        ("风量往小了调", "cabin_fan_up", "cabin_fan_down"),
    ],
)
def test_a_clause_is_a_step_for_the_side_its_words_ask_for(clause, on, selected):
    analyzer = ClauseAnalyzer(pack("cockpit"), base_settings().planner)
    from protocol.turn_debug import Candidate

    assert analyzer.analyze(clause, classifier=[Candidate(intent=on, score=0.97)], detector=[]).selected == [selected]


@pytest.mark.parametrize(
    "operator,value,seen,holds",
    [
        ("equals", "pending_shipment", "pending_shipment", True),
        ("equals", "pending_shipment", "shipped", False),
        ("not_equals", "delivered", "shipped", True),
        ("in", ["pending_shipment", "shipped"], "shipped", True),
        ("in", ["pending_shipment"], "delivered", False),
    ],
)
def test_conditions_read_the_source_steps_result(operator, value, seen, holds):
    cond = StepCondition(source_step="s1", field="order_status", operator=operator, value=value)
    assert condition_holds(cond, {"s1": {"order_status": seen}}) == (holds, seen)
    assert condition_holds(cond, {})[0] is (operator == "not_equals")


def test_example_evidence_is_the_best_bigram_overlap_with_one_training_example():
    """The inverted index finds what comparing the clause with every training example would."""
    from engine.workflow.analysis import _bigrams

    p = pack("cockpit")
    analyzer = ClauseAnalyzer(p, base_settings().planner)
    for text in ["打开车窗", "把空调调到22度", "如果还没发货就帮我取消", "雨刷还在刮", "随便说点什么吧"]:
        grams, found = _bigrams(text), analyzer._example_overlap(_bigrams(text))
        for intent in p.intents:
            if intent.id.startswith("__"):
                continue
            brute = max((len(grams & _bigrams(e)) / len(grams | _bigrams(e)) for e in intent.examples), default=0.0)
            assert found.get(intent.id, 0.0) == pytest.approx(brute), (text, intent.id)


def test_a_clause_that_reports_what_someone_said_is_no_step():
    """Timeflow's `rules.reasons`: 组长说要改期 beside 删掉吧 is why, not a move of its own; a request said in the
    second clause is still a step."""
    from engine.workflow.analysis import ClauseScore
    from engine.workflow.planners import HeuristicWorkflowPlanner, StepBuilder, TurnAnalysis

    p = pack("timeflow")
    planner = HeuristicWorkflowPlanner(p, StepBuilder(p, lambda *a, **k: {}), max_steps=4)
    delete = ClauseScore(text="周四的聚餐删掉吧", selected=["schedule_delete"])
    for second, accepted in (("组长说要改期", False), ("周五的例会改到下午", True)):
        update = ClauseScore(text=second, selected=["schedule_update"])
        found = planner.plan(TurnAnalysis(text=f"{delete.text}，{second}", clauses=[delete, update]))
        assert found.accepted is accepted, second
