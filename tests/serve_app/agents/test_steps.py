"""A paused step's workflow kept in its message and restored when the decision resumes it."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

from engine.conversation.agent_runner import report, start
from protocol.agents import AgentTimeRange, ExecutionLayerInput
from protocol.store import ConversationMessageDTO
from serve_app.agents.steps import cancelled, kept, restored

NOW = datetime(2026, 12, 2, 9, tzinfo=timezone(timedelta(hours=8)))


def step(agent: str, function: str, raw: str) -> ExecutionLayerInput:
    return ExecutionLayerInput(
        target_agent_name=agent,
        target_function_name=function,
        raw_input=raw,
        parsed_params={"when": {"text": "今天"}},
        source_message_id=uuid.uuid4(),
        recent_messages=[ConversationMessageDTO.model_construct()],  # never kept: read again on resume
        time_range=AgentTimeRange(start_at=NOW, end_at=NOW + timedelta(days=1), source="user_explicit"),
    )


def test_a_paused_step_keeps_the_steps_after_it_and_the_reports_before_it():
    first = step("schedule_todo_agent", "create", "开会")
    paused = step("feedback_agent", "record", "跑步完成了")
    last = step("review_agent", "review", "复盘这周")
    workflow = start([first, paused, last])
    workflow.steps = [last]
    report(workflow, first, "applied", "已保存。")
    params = kept(workflow, paused)
    back = restored(params)
    assert back is not None
    again, step_back = back
    assert [s.raw_input for s in again.steps] == ["复盘这周"] and again.total == 3
    assert [(r.agent_name, r.status) for r in again.reports] == [("schedule_todo_agent", "applied")]
    assert step_back.raw_input == "跑步完成了" and step_back.recent_messages == []
    stopped = cancelled(params)
    assert stopped is not None and [r.status for r in stopped.reports] == ["applied", "declined", "not_run"]


def test_a_single_step_keeps_nothing():
    only = step("review_agent", "review", "复盘")
    assert kept(start([only]), only) == {} and restored({}) is None and cancelled({}) is None
