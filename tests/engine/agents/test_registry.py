"""AgentRegistry: the capability tables, their rendering for a planner, dispatch and the envelope contract."""

from __future__ import annotations

from datetime import UTC, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from engine.agents import AgentContractViolation, AgentRegistry, UnknownAgentFunction
from engine.agents.base import definition
from protocol.agents import AGENT_NAMES, AgentResponseEnvelope, SubAgentInputBase
from tests.engine.agents.agent_inputs import at, item, make_input

REGISTRY = AgentRegistry.default()
TABLE = {
    ("schedule_todo_agent", "create"): (["time_range"], ["title", "item_type"], False, True),
    ("schedule_todo_agent", "update"): ([], [], True, True),
    ("schedule_todo_agent", "delete"): ([], [], True, True),
    ("schedule_todo_agent", "query"): (["time_range"], [], True, False),
    ("feedback_agent", "record"): (["time_range"], [], True, True),
    ("replan_agent", "replan"): (["time_range"], [], True, True),
    ("review_agent", "review"): (["time_range"], [], True, False),
    ("long_task_split_agent", "split"): (["goal_title", "deadline", "weekly_hours"], ["current_level"], False, True),
    ("scheduling_agent", "plan"): ([], ["classifier_intent", "classifier_score"], False, True),
}


def test_the_capability_table() -> None:
    rows = REGISTRY.definitions()
    assert {
        (r.agent_name, r.function_name): (r.required_fields, r.optional_fields, r.needs_candidates, r.writes)
        for r in rows
    } == TABLE
    assert len(rows) == len(TABLE)
    assert {r.agent_name for r in rows} == set(AGENT_NAMES)
    assert all(r.description for r in rows)


def test_definition_lookup() -> None:
    assert REGISTRY.definition("feedback_agent", "record").needs_candidates
    for agent, function in (("feedback_agent", "create"), ("calendar_agent", "create")):
        with pytest.raises(UnknownAgentFunction) as caught:
            REGISTRY.definition(agent, function)
        assert caught.value.code == "unknown_function"


def test_agent_lookup() -> None:
    assert "deadline" in REGISTRY.agent("long_task_split_agent").questions
    with pytest.raises(UnknownAgentFunction):
        REGISTRY.agent("calendar_agent")


def test_render_capabilities_has_one_line_per_function() -> None:
    text = REGISTRY.render_capabilities()
    lines = text.splitlines()[1:]
    assert len(lines) == len(TABLE)
    for (agent, function), (required, optional, _, writes) in TABLE.items():
        [line] = [line for line in lines if f"`{agent}.{function}`" in line]
        assert f"必填：{'、'.join(required) or '无'}；可选：{'、'.join(optional) or '无'}" in line
        assert ("会产生待用户确认的写入" if writes else "只读不写") in line
    assert "- `schedule_todo_agent.create` — 新建一条日程或待办" in text


async def test_dispatch_runs_the_agent() -> None:
    envelope = await REGISTRY.dispatch(
        "schedule_todo_agent", "create", make_input("明天早上八点去拿快递", at(12, 2, 8), at(12, 2, 9))
    )
    assert envelope.agent_name == "schedule_todo_agent" and envelope.function_name == "create"
    assert envelope.db_action["payload"]["title"] == "去拿快递"


async def test_dispatch_of_an_unknown_function() -> None:
    with pytest.raises(UnknownAgentFunction):
        await REGISTRY.dispatch("review_agent", "delete", make_input("删掉", at(12, 1), at(12, 2)))


GOOD_ACTION = {
    "action": "create",
    "target_type": "task_item",
    "preview_text": "新建日程：开会",
    "payload": {"item_type": "schedule", "title": "开会"},
}


class ScriptedAgent:
    """An agent double that answers whatever envelope the test scripts."""

    name = "review_agent"

    def __init__(self, *, db_action=None, need_user=True, function="review", writes=True) -> None:
        self.db_action, self.need_user, self.function, self.writes = db_action, need_user, function, writes

    def definitions(self):
        return [definition("review_agent", "review", "测试", needs_candidates=False, writes=self.writes)]

    async def run(self, function, inp):
        return AgentResponseEnvelope(
            agent_name="review_agent",
            function_name=self.function,
            isNeedUser=self.need_user,
            isDisplayResult=True,
            isError=False,
            result={"reply": "好"},
            db_action=self.db_action,
        )


async def dispatch_scripted(**script):
    registry = AgentRegistry([ScriptedAgent(**script)])
    return await registry.dispatch("review_agent", "review", make_input("复盘", at(12, 1), at(12, 2)))


async def test_a_scripted_write_that_waits_for_the_user_passes() -> None:
    envelope = await dispatch_scripted(db_action=GOOD_ACTION)
    assert envelope.db_action == GOOD_ACTION


@pytest.mark.parametrize(
    ("script", "words"),
    [
        ({"db_action": GOOD_ACTION, "need_user": False}, "isNeedUser false"),
        ({"db_action": GOOD_ACTION, "writes": False}, "read-only"),
        ({"db_action": {**GOOD_ACTION, "idempotency_key": "k1"}}, "idempotency_key"),
        ({"db_action": {**GOOD_ACTION, "action": "delete"}}, "invalid db_action"),
        ({"db_action": {**GOOD_ACTION, "preview_text": "  "}}, "invalid db_action"),
        ({"function": "summary"}, "answered as review_agent.summary"),
    ],
)
async def test_contract_violations(script: dict, words: str) -> None:
    with pytest.raises(AgentContractViolation) as caught:
        await dispatch_scripted(**script)
    assert caught.value.code == "agent_contract"
    assert words in caught.value.message


def test_a_registry_refuses_an_agent_twice() -> None:
    with pytest.raises(ValueError):
        AgentRegistry([ScriptedAgent(), ScriptedAgent()])


async def test_every_default_function_answers_within_the_contract() -> None:
    meeting = item("开会", start=at(12, 2, 15), end=at(12, 2, 16))
    inputs = {
        "create": "明天下午三点开会",
        "update": "开会改到后天上午十点",
        "delete": "开会取消",
        "query": "明天有啥",
        "record": "开会开完了，用了一个小时",
        "replan": "重新排一下",
        "review": "复盘一下",
        "split": "我想三个月学会日语，每周能花十个小时",
        "plan": "这周想约三次羽毛球",
    }
    for agent, function in TABLE:
        inp = make_input(inputs[function], at(12, 2), at(12, 3), items=[meeting])
        envelope = await REGISTRY.dispatch(agent, function, inp)
        assert not envelope.isError, (agent, function, envelope.error_message)


def test_the_engine_agents_do_not_import_ray() -> None:
    sources = Path(__file__).resolve().parents[3].joinpath("engine", "agents").glob("*.py")
    for source in sources:
        text = source.read_text(encoding="utf-8")
        assert "import ray" not in text and "from ray" not in text, source.name


async def test_the_time_zone_is_the_one_now_carries() -> None:
    """An input read from JSON carries a fixed offset, and the store's times may come in UTC."""
    utc_meeting = item("开会", start=at(12, 2, 15).astimezone(UTC), end=at(12, 2, 16).astimezone(UTC))
    wire = make_input("明天有什么安排", at(12, 2), at(12, 3), items=[utc_meeting]).model_dump(mode="json")
    inp = SubAgentInputBase.model_validate(wire)
    assert inp.now.utcoffset() == timedelta(hours=8) and not isinstance(inp.now.tzinfo, ZoneInfo)
    envelope = await REGISTRY.dispatch("schedule_todo_agent", "query", inp)
    assert envelope.result["reply"] == "明天有 1 项安排：15:00 开会。"
    later = {"start_at": "2026-12-03T02:00:00Z", "end_at": "2026-12-03T03:00:00Z", "source": "user_explicit"}
    created = await REGISTRY.dispatch(
        "schedule_todo_agent",
        "create",
        SubAgentInputBase.model_validate({**wire, "raw_input": "后天上午十点提醒我交材料", "time_range": later}),
    )
    assert created.db_action["payload"]["title"] == "交材料"
    assert created.db_action["payload"]["start_at"] == "2026-12-03T10:00:00+08:00"
    assert created.db_action["preview_text"] == "新建日程：后天 10:00–11:00 交材料"
