"""feedback_agent.record: status and minutes read from the user's words, one normalized feedback write."""

from __future__ import annotations

import pytest

from engine.agents import AgentRegistry
from engine.agents.feedback import duration_minutes, feedback_status
from protocol.write_payloads import FeedbackPayload
from tests.engine.agents.agent_inputs import at, checked_action, item, make_input

REGISTRY = AgentRegistry.default()
GYM = item("健身", start=at(12, 1, 7), end=at(12, 1, 8), version=4)


@pytest.mark.parametrize(
    ("text", "status"),
    [
        ("健身做完了，用了四十分钟", "completed"),
        ("周报早就交上去了", "completed"),
        ("单词已经背完啦", "completed"),
        ("昨天游泳游完了", "completed"),
        ("周会我参加了", "completed"),
        ("加班到九点，背单词没做完", "not_completed"),
        ("今天太忙了没时间弄", "not_completed"),
        ("报告写了一半，剩下的还得改", "partially_completed"),
        ("英语听力只练了二十分钟", "partially_completed"),
        ("方案大概完成了七成", "partially_completed"),
        ("跑步今天没去，改天补上", "deferred"),
        ("组会推迟到下周了", "deferred"),
        ("瑜伽课不去了，取消吧", "cancelled"),
        ("晚上的平板支撑没坚持下来", "not_completed"),
        ("背单词背到一半就放弃了", "partially_completed"),
        ("健身房太远，放弃了", "not_completed"),
        ("前天去超市采购已经办了", "completed"),
        ("昨天早上那次降压药忘吃了", "not_completed"),
        ("钙片今天中午吃了", "completed"),
        ("晚上给爸打电话了，说了半个钟头", "completed"),
        ("快递下午取了", "completed"),
        ("今天维生素没吃", "not_completed"),
    ],
)
def test_status_words(text: str, status: str) -> None:
    assert feedback_status(text) == status


def test_no_status_words() -> None:
    assert feedback_status("今天天气不错") is None


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("用了40分钟", 40),
        ("练了一个半小时", 90),
        ("写了两小时", 120),
        ("跑了1.5小时", 90),
        ("花了一小时二十分钟", 80),
        ("半小时就弄完了", 30),
        ("跑了五公里", None),
        ("熬了三十个小时", None),
    ],
)
def test_duration(text: str, minutes: int | None) -> None:
    assert duration_minutes(text) == minutes


async def record(raw: str, candidates=(GYM,)):
    return await REGISTRY.dispatch(
        "feedback_agent", "record", make_input(raw, at(12, 1), at(12, 2), items=list(candidates))
    )


async def test_record_completed_with_minutes() -> None:
    envelope = await record("今天的健身搞定了，练了四十分钟")
    action = checked_action(envelope, FeedbackPayload)
    assert action["action"] == "feedback" and action["target_type"] == "feedback"
    assert action["payload"] == {
        "task_item_id": str(GYM.id),
        "item_version": 4,
        "feedback_status": "completed",
        "normalized_feedback": "「健身」已完成，用时 40 分钟",
        "duration_minutes": 40,
        "occurred_at": "2026-12-01T10:00:00+08:00",
    }
    assert action["preview_text"] == "记录反馈：「健身」已完成，用时 40 分钟"
    assert envelope.result["feedback"] == action["payload"]


async def test_record_a_negated_done_as_not_completed() -> None:
    action = checked_action(await record("健身没做完，腿太酸了"), FeedbackPayload)
    assert action["payload"]["feedback_status"] == "not_completed"
    assert action["payload"]["normalized_feedback"] == "「健身」未完成"
    assert action["payload"]["duration_minutes"] is None


async def test_record_half_done() -> None:
    action = checked_action(await record("健身做了一半就走了，大概半小时"), FeedbackPayload)
    assert action["payload"]["feedback_status"] == "partially_completed"
    assert action["payload"]["normalized_feedback"] == "「健身」完成了一部分，用时 30 分钟"


async def test_record_without_status_words_asks() -> None:
    envelope = await record("健身那个事情")
    assert envelope.isError and envelope.db_action is None
    assert "健身" in envelope.error_message


async def test_record_without_one_resolved_item_asks() -> None:
    other = item("背单词", start=at(12, 1, 21), end=at(12, 1, 22))
    envelope = await record("做完了", candidates=(GYM, other))
    assert envelope.isError and envelope.db_action is None
