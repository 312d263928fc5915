"""review_agent.review: statistics from the given facts only, a template text that says nothing else, a writer."""

from __future__ import annotations

import re

from engine.agents import AgentRegistry
from engine.agents.review import ReviewAgent
from protocol.agents import FeedbackFact
from tests.engine.agents.agent_inputs import FakeWriter, at, fact, item, make_input

GYM = item("健身", start=at(12, 1, 7), end=at(12, 1, 8))
REPORT = item("写周报", start=at(12, 1, 9), end=at(12, 1, 11))
WORDS = item("背单词", start=at(12, 1, 12), end=at(12, 1, 12, 30))
READING = item("读书", start=at(12, 1, 21), end=at(12, 1, 22))
DENTIST = item("看牙", start=at(12, 1, 15), end=at(12, 1, 16), status="cancelled")
CALL = item("给妈妈打电话", start=at(12, 1, 20), end=at(12, 1, 20, 30))
ITEMS = [GYM, REPORT, WORDS, READING, DENTIST, CALL]
FEEDBACKS = [
    fact(GYM, "completed", minutes=40),
    fact(REPORT, "partially_completed", minutes=60, when=at(12, 1, 11)),
    fact(REPORT, "completed", minutes=30, when=at(12, 1, 16)),
    fact(WORDS, "not_completed"),
    fact(READING, "deferred"),
]


def review_input(items=ITEMS, feedbacks=FEEDBACKS):
    return make_input("今天过得怎么样，帮我复盘下", at(12, 1), at(12, 2), items=items, feedbacks=feedbacks)


async def test_stats_come_from_the_facts() -> None:
    envelope = await AgentRegistry.default().dispatch("review_agent", "review", review_input())
    assert not envelope.isNeedUser and envelope.db_action is None and envelope.isDisplayResult
    stats = envelope.result["stats"]
    assert {
        k: stats[k]
        for k in (
            "planned",
            "completed",
            "partially_completed",
            "not_completed",
            "deferred",
            "cancelled",
            "no_feedback",
            "completion_rate",
            "recorded_minutes",
        )
    } == {
        "planned": 6,
        "completed": 2,
        "partially_completed": 0,
        "not_completed": 1,
        "deferred": 1,
        "cancelled": 1,
        "no_feedback": 1,
        "completion_rate": 40,
        "recorded_minutes": 130,
    }
    assert stats["completed_titles"] == ["健身", "写周报"]
    assert stats["unfinished"] == [
        {"title": "背单词", "outcome": "not_completed"},
        {"title": "读书", "outcome": "deferred"},
    ]
    assert stats["no_feedback_titles"] == ["给妈妈打电话"]
    assert stats["period"] == "今天"


async def test_the_text_names_only_the_facts() -> None:
    envelope = await AgentRegistry.default().dispatch("review_agent", "review", review_input())
    text, stats = envelope.result["reply"], envelope.result["stats"]
    assert text.splitlines() == [
        "今天共安排 6 项：完成 2 项，未完成 1 项，推迟 1 项，取消 1 项，未记录结果 1 项，完成率 40%。",
        "已完成：健身、写周报。",
        "没做完：背单词（未完成）、读书（推迟）。",
        "还没记录结果：给妈妈打电话。",
        "共记录用时 130 分钟。",
        "建议：完成得不多，下次试着少排几件，把大任务拆成小步骤。",
    ]
    titles = {i.title for i in ITEMS}
    for line in text.splitlines():
        if "：" in line and not line.startswith(("今天", "建议")):
            named = re.sub(r"（[^）]*）", "", line.split("：", 1)[1].rstrip("。")).split("、")
            assert set(named) <= titles
    numbers = {str(v) for v in stats.values() if isinstance(v, int)}
    assert set(re.findall(r"\d+", text)) <= numbers


async def test_a_mostly_done_day_gets_the_encouraging_suggestion() -> None:
    feedbacks = [
        fact(GYM, "completed"),
        fact(REPORT, "completed"),
        fact(WORDS, "completed"),
        fact(READING, "completed", minutes=45),
    ]
    envelope = await ReviewAgent().run("review", review_input(items=[GYM, REPORT, WORDS, READING], feedbacks=feedbacks))
    assert envelope.result["stats"]["completion_rate"] == 100
    assert envelope.result["reply"].endswith("建议：节奏不错，保持现在的安排强度，可以留些精力给更重要的事。")
    assert "共记录用时 45 分钟。" in envelope.result["reply"]


async def test_an_empty_range() -> None:
    envelope = await ReviewAgent().run("review", review_input(items=[], feedbacks=[]))
    assert envelope.result["reply"] == "今天没有安排，暂时没有可以复盘的内容。"
    assert envelope.result["stats"]["planned"] == 0


async def test_a_week_is_named_by_its_days() -> None:
    inp = make_input("这周复盘一下", at(11, 30), at(12, 7), items=[GYM], feedbacks=[])
    envelope = await ReviewAgent().run("review", inp)
    assert envelope.result["reply"].startswith("11月30日至12月6日共安排 1 项：完成 0 项，未记录结果 1 项")
    assert envelope.result["reply"].endswith("建议：还没有反馈记录，做完一件事后告诉我一声，复盘会更准确。")


async def test_a_writer_that_answers_replaces_the_text_and_sees_the_stats() -> None:
    writer = FakeWriter("今天完成了健身和写周报，背单词没做完，明天早点开始。")
    envelope = await AgentRegistry.default(writer).dispatch("review_agent", "review", review_input())
    assert envelope.result["reply"] == "今天完成了健身和写周报，背单词没做完，明天早点开始。"
    assert writer.calls[0][1] == envelope.result["stats"]


async def test_the_template_stays_when_the_writer_has_nothing_or_times_out() -> None:
    template = (await ReviewAgent().run("review", review_input())).result["reply"]
    for writer in (FakeWriter(None), FakeWriter("   "), FakeWriter(raises=True), FakeWriter("太慢了", delay=1)):
        envelope = await ReviewAgent(writer, timeout_s=0.05).run("review", review_input())
        assert envelope.result["reply"] == template
        assert writer.calls


def left(fact_: FeedbackFact) -> FeedbackFact:
    """The feedback as the store reads it once its item was moved out of the range (a replan)."""
    return fact_.model_copy(
        update={"item_title": fact_.normalized_feedback.split("」")[0][1:], "item_left_range": True}
    )


async def test_feedback_on_an_item_moved_out_of_the_week_is_part_of_the_review() -> None:
    """今天的健身没完成, then a replan moved the workout into next week: this week's review still has what the user
    said, named apart from the week's own items, instead of "nothing was planned"."""
    gym = item("健身", start=at(12, 8, 19), end=at(12, 8, 20))  # now next week
    missed = left(fact(gym, "not_completed", when=at(12, 2, 21)))
    alone = await ReviewAgent().run(
        "review", make_input("帮我复盘一下这周", at(11, 30), at(12, 7), items=[], feedbacks=[missed])
    )
    assert alone.result["stats"]["moved_out"] == [{"title": "健身", "outcome": "not_completed"}]
    assert "没有安排" not in alone.result["reply"] and "健身（未完成）" in alone.result["reply"]
    with_items = await ReviewAgent().run(
        "review", make_input("帮我复盘一下这周", at(11, 30), at(12, 7), items=[REPORT], feedbacks=[missed])
    )
    assert with_items.result["stats"]["planned"] == 1 and "健身（未完成）" in with_items.result["reply"]
    assert "还没有反馈记录" not in with_items.result["reply"]  # the user did say how the week went


async def test_feedback_on_an_item_still_in_the_range_but_not_reviewed_is_not_called_moved() -> None:
    """A review narrowed to some items (复盘一下写周报) does not list the range's other items as moved out."""
    still = fact(GYM, "completed")  # the store says its item is still in the range (item_left_range false)
    envelope = await ReviewAgent().run("review", review_input(items=[REPORT], feedbacks=[still]))
    assert envelope.result["stats"]["moved_out"] == []
