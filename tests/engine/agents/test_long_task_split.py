"""long_task_split_agent: questions, prefill, parse_answer, and the split into stages and near-term subtasks."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from engine.agents import AgentRegistry
from engine.agents.long_task_split import LongTaskSplitAgent
from engine.errors import InvalidInput
from protocol.agents import GoalSplitCandidate
from protocol.write_payloads import GoalSplitPayload
from tests.engine.agents.agent_inputs import NOW, FakeWriter, at, checked_action, make_input

AGENT = LongTaskSplitAgent()


def test_a_question_for_every_field() -> None:
    definition = AgentRegistry.default().definition("long_task_split_agent", "split")
    assert definition.required_fields == ["goal_title", "deadline", "weekly_hours"]
    assert definition.optional_fields == ["current_level"]
    assert set(AGENT.questions) == {"goal_title", "deadline", "weekly_hours", "current_level"}
    assert AGENT.questions["deadline"] == "这个目标打算在什么时候之前完成？"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("我想三个月学会日语帮我拆一下", {"goal_title": "学会日语", "deadline": "2027-03-01T10:00:00+08:00"}),
        # the goal between the request words; a period as the deadline ends with its last day; 年终总结 is a thing
        ("帮我把三个月内学会游泳拆一下", {"goal_title": "学会游泳", "deadline": "2027-03-01T10:00:00+08:00"}),
        ("我想这个月把雅思准备好", {"goal_title": "雅思准备好", "deadline": "2026-12-31T23:59:00+08:00"}),
        ("明天之前把报告写完", {"goal_title": "报告写完", "deadline": "2026-12-02T23:59:00+08:00"}),
        ("月底前得把毕业设计做完", {"goal_title": "毕业设计做完", "deadline": "2026-12-31T23:59:00+08:00"}),
        ("月底前把年终总结写好", {"goal_title": "年终总结写好", "deadline": "2026-12-31T23:59:00+08:00"}),
        (
            "我想三个月学会日语，每周能花十个小时",
            {"goal_title": "学会日语", "deadline": "2027-03-01T10:00:00+08:00", "weekly_hours": 10},
        ),
        (
            "明年三月前要考过雅思，零基础，一天一小时",
            {
                "goal_title": "考过雅思",
                "deadline": "2027-02-28T23:59:00+08:00",
                "weekly_hours": 7,
                "current_level": "零基础",
            },
        ),
        (
            "想在年底前跑完一场全马，帮我拆成每周的训练目标",
            {"goal_title": "跑完一场全马", "deadline": "2026-12-31T23:59:00+08:00"},
        ),
        ("半年内想减掉十斤，给我分阶段安排下", {"goal_title": "减掉十斤", "deadline": "2027-06-01T10:00:00+08:00"}),
        (
            "打算一年内读完五十本书，工作日每天半小时，怎么分解",
            {"goal_title": "读完五十本书", "deadline": "2027-12-01T10:00:00+08:00", "weekly_hours": 2.5},
        ),
        # before a holiday is before it begins; before a date includes the date
        ("国庆之前学会游泳", {"goal_title": "学会游泳", "deadline": "2027-09-30T23:59:00+08:00"}),
        ("12月20号之前把简历改好", {"goal_title": "简历改好", "deadline": "2026-12-20T23:59:00+08:00"}),
        ("把考驾照这件事拆成具体步骤", {"goal_title": "考驾照"}),
        ("给我拆一下：三个月内学会游泳", {"goal_title": "学会游泳", "deadline": "2027-03-01T10:00:00+08:00"}),
        ("明年要考研，帮我规划一下", {"goal_title": "考研"}),
    ],
)
def test_prefill_reads_what_the_request_says(raw: str, expected: dict) -> None:
    assert AGENT.prefill(raw, NOW) == expected


@pytest.mark.parametrize(
    ("field", "text", "value"),
    [
        ("deadline", "明年三月前", "2027-02-28T23:59:00+08:00"),
        ("deadline", "三个月内吧", "2027-03-01T10:00:00+08:00"),
        ("deadline", "2027年3月1日", "2027-03-01T23:59:00+08:00"),
        ("deadline", "下个月底", "2027-01-31T23:59:00+08:00"),
        ("deadline", "明年年底", "2027-12-31T23:59:00+08:00"),
        ("deadline", "五月份", "2027-05-31T23:59:00+08:00"),
        ("deadline", "两周", "2026-12-15T10:00:00+08:00"),
        ("deadline", "不知道", None),
        ("deadline", "越快越好", None),
        ("deadline", "上个月", None),
        ("weekly_hours", "每周五小时", 5),
        ("weekly_hours", "10", 10),
        ("weekly_hours", "一天一小时", 7),
        ("weekly_hours", "大概8个小时吧", 8),
        ("weekly_hours", "每天30分钟", 3.5),
        ("weekly_hours", "很多", None),
        ("weekly_hours", "每天二十五小时", None),
        ("current_level", "学过一点五十音", "学过一点五十音"),
        ("current_level", "   ", None),
        ("goal_title", "我想学会弹吉他", "学会弹吉他"),
        ("goal_title", "", None),
        ("goal_title", "明年三月前，每周五小时", None),
        ("deadline", "每周五小时", None),
        ("deadline", "明年三月前，每周五小时", "2027-02-28T23:59:00+08:00"),
    ],
)
def test_parse_answer(field: str, text: str, value) -> None:
    assert AGENT.parse_answer(field, text, NOW) == value


def test_parse_answer_of_an_unknown_field() -> None:
    with pytest.raises(InvalidInput):
        AGENT.parse_answer("budget", "一万块", NOW)


async def split(raw: str, agent: LongTaskSplitAgent = AGENT, **params):
    return await agent.run("split", make_input(raw, at(12, 1), at(12, 2), params=params))


async def test_split_into_stages_and_two_weeks_of_subtasks() -> None:
    raw = "我想三个月学会日语，每周能花十个小时"
    envelope = await AgentRegistry.default().dispatch(
        "long_task_split_agent", "split", make_input(raw, at(12, 1), at(12, 2))
    )
    action = checked_action(envelope, GoalSplitPayload)
    candidate = GoalSplitCandidate.model_validate(envelope.result)
    assert candidate.plan_overview.splitlines() == [
        "「学会日语」计划（12月1日–2027年3月1日，每周约 10 小时）：",
        "1. 打基础（12月1日–12月22日）：明确标准、准备资料，建立每周固定的投入节奏",
        "2. 系统推进（12月23日–2027年1月23日）：按计划完成主要内容，每周检查一次进度",
        "3. 强化提升（2027年1月24日–2027年2月14日）：针对薄弱环节专项练习，做阶段性检验",
        "4. 冲刺收尾（2027年2月15日–2027年3月1日）：查漏补缺，做最终检验",
        "近两周先完成 6 个子任务，每个阶段开始前再细化下一步。",
    ]
    assert (
        candidate.task_profile_summary == "目标：学会日语；截止：2027年3月1日；每周可投入约 10 小时；当前基础：未说明"
    )
    assert [s["title"] for s in candidate.subtasks][:2] == [
        "梳理「学会日语」的具体要求并准备资料",
        "开始第一部分内容，记下卡住的地方",
    ]
    assert [s["due_at"][:10] for s in candidate.subtasks] == [
        "2026-12-02",
        "2026-12-04",
        "2026-12-06",
        "2026-12-09",
        "2026-12-11",
        "2026-12-13",
    ]
    assert all(s["description"] == "约 200 分钟；属于「打基础」阶段" for s in candidate.subtasks)
    payload = action["payload"]
    assert action["action"] == "goal_split" and action["target_type"] == "long_goal"
    assert payload["goal"] == {
        "title": "学会日语",
        "description": raw,
        "plan_overview": candidate.plan_overview,
        "start_at": "2026-12-01T10:00:00+08:00",
        "deadline_at": "2027-03-01T10:00:00+08:00",
        "status": "active",
    }
    assert payload["subtasks"] == candidate.subtasks
    assert (
        action["preview_text"] == "新建长期目标「学会日语」：分 4 个阶段，2027年3月1日前完成；先安排近两周的 6 个子任务"
    )


def _minutes(subtask: dict) -> int:
    return int(subtask["description"].split()[1])


@pytest.mark.parametrize(
    ("raw", "params"),
    [
        ("想学吉他，帮我拆一下", {"deadline": "明年三月前", "weekly_hours": 4, "current_level": "零基础"}),
        ("两周内把毕业论文初稿写完，每天两小时", {}),
        ("准备考教资，帮我拆一下", {"deadline": "2027-06-30T23:59:00+08:00", "weekly_hours": "每周三个半小时"}),
        ("十天后要交作品集，帮我拆成几步", {"weekly_hours": 0.5, "goal_title": "作品集"}),
    ],
)
async def test_subtasks_respect_the_weekly_hours_and_the_deadline(raw: str, params: dict) -> None:
    envelope = await split(raw, **params)
    payload = checked_action(envelope, GoalSplitPayload)["payload"]
    hours = AGENT.parse_answer("weekly_hours", str(params.get("weekly_hours", "")), NOW) or 14
    deadline = datetime.fromisoformat(payload["goal"]["deadline_at"])
    subtasks = payload["subtasks"]
    assert 3 <= len(subtasks) <= 6
    dues = [datetime.fromisoformat(s["due_at"]) for s in subtasks]
    assert all(NOW < due <= min(deadline, NOW + timedelta(days=14)) for due in dues)
    offsets = [(due.date() - NOW.date()).days for due in dues]
    for first in range(1, 15):
        week = [s for s, offset in zip(subtasks, offsets, strict=True) if first <= offset < first + 7]
        assert sum(_minutes(s) for s in week) <= hours * 60


async def test_short_goals_have_three_stages() -> None:
    envelope = await split("两周内把毕业论文初稿写完，每天两小时")
    lines = envelope.result["plan_overview"].splitlines()
    assert lines[1:4] == [
        "1. 起步准备（12月1日–12月4日）：明确标准、准备资料，建立每周固定的投入节奏",
        "2. 集中推进（12月5日–12月10日）：完成主要内容，每周检查一次进度",
        "3. 冲刺收尾（12月11日–12月15日）：查漏补缺，做最终检验",
    ]
    stages = [s["description"].split("「")[1].rstrip("」阶段") for s in envelope.result["subtasks"]]
    assert stages == ["起步准备", "起步准备", "集中推进", "集中推进", "冲刺收尾", "冲刺收尾"]


async def test_parsed_params_override_the_request() -> None:
    envelope = await split("我想三个月学会日语", deadline="明年年底", weekly_hours=3, current_level="学过五十音")
    payload = checked_action(envelope, GoalSplitPayload)["payload"]
    assert payload["goal"]["deadline_at"] == "2027-12-31T23:59:00+08:00"
    assert (
        payload["task_profile_summary"]
        == "目标：学会日语；截止：2027年12月31日；每周可投入约 3 小时；当前基础：学过五十音"
    )
    assert len(payload["subtasks"]) == 4 and _minutes(payload["subtasks"][0]) == 90


async def test_missing_fields_are_asked_for() -> None:
    envelope = await split("我想三个月学会日语帮我拆一下")
    assert envelope.isError and envelope.db_action is None and not envelope.isNeedUser
    assert envelope.result["missing_fields"] == ["weekly_hours"]
    assert envelope.result["reply"] == "每周大概能投入多少小时？"
    envelope = await split("帮我拆一下", weekly_hours="很多")
    assert envelope.result["missing_fields"] == ["goal_title", "deadline", "weekly_hours"]


async def test_a_writer_may_write_the_overview() -> None:
    raw = "我想三个月学会日语，每周能花十个小时"
    template = (await split(raw)).result["plan_overview"]
    writer = FakeWriter("先用三周打好假名和发音基础，再系统学语法，最后一个月冲刺。")
    envelope = await split(raw, agent=LongTaskSplitAgent(writer))
    assert envelope.result["plan_overview"] == writer.answer
    assert checked_action(envelope, GoalSplitPayload)["payload"]["goal"]["plan_overview"] == writer.answer
    assert [stage["name"] for stage in writer.calls[0][1]["stages"]] == ["打基础", "系统推进", "强化提升", "冲刺收尾"]
    for silent in (FakeWriter(None), FakeWriter(raises=True)):
        envelope = await split(raw, agent=LongTaskSplitAgent(silent, timeout_s=0.05))
        assert envelope.result["plan_overview"] == template


def test_a_past_dated_deadline_is_not_an_answer() -> None:
    assert AGENT.parse_answer("deadline", "2025年3月1日", NOW) is None
    assert AGENT.parse_answer("deadline", "今年十一月底", NOW) is None
