"""A planning request's draft on both transports: the WebSocket's write.confirmation_required carries it as
`scheduling`, and the HTTP response's `agent.scheduling` is the same draft (task level, slots, questions); a draft
with no write (no free time) reaches HTTP from execution.result."""

from __future__ import annotations

import asyncio
import uuid
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from engine.agents.scheduling import SchedulingAgent
from protocol.agents import AgentTimeRange, BusySpan, SubAgentInputBase
from protocol.http_chat import ChatResponse, TurnStatus
from protocol.scheduling import SchedulingDraft
from protocol.ws import ConfirmationRequiredPayload, ExecutionResultPayload, TurnSummary, WsEnvelope
from serve_app.agents.wire import answered

TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2026, 12, 1, 10, 0, tzinfo=TZ)
TURN = TurnSummary(status="x", reply="r")
DECIDED = ChatResponse(session_id="s", reply="收到", status=TurnStatus.decided)


def _planned(text: str, busy: list[BusySpan] = ()) -> dict:
    inp = SubAgentInputBase(
        user_id=uuid.uuid4(),
        raw_input=text,
        time_range=AgentTimeRange(start_at=NOW, end_at=NOW + timedelta(days=7), source="system_default"),
        recent_messages=[],
        parsed_params={},
        busy_times=list(busy),
        now=NOW,
    )
    envelope = asyncio.run(SchedulingAgent().run("plan", inp))
    assert isinstance(envelope.result, dict)
    return envelope.result


def test_the_draft_rides_the_confirmation_event_and_the_http_response():
    result = _planned("想学做蛋糕")
    payload = ConfirmationRequiredPayload(
        write_request_id=uuid.uuid4(),
        payload_hash="a" * 64,
        preview_text=result["reply"],
        confirmation_payload={},
        expires_at=NOW + timedelta(minutes=15),
        turn=TURN,
        scheduling=SchedulingDraft.of(result),
    )
    event = WsEnvelope(type="write.confirmation_required", payload=payload.model_dump(mode="json"))
    agent = answered(DECIDED, [event], "s").agent
    assert agent is not None and agent.status == "waiting_confirmation"
    draft = agent.scheduling
    assert draft is not None and draft.task_level == "L1" and len(draft.slots) == 2
    assert draft.missing == ["goal", "period", "duration"] and len(draft.questions) == 3


def test_a_draft_without_slots_reaches_http_from_the_result():
    full = [
        BusySpan(start_at=NOW.replace(hour=0) + timedelta(days=d), end_at=NOW.replace(hour=23) + timedelta(days=d))
        for d in range(9)
    ]
    result = _planned("想学做蛋糕", full)
    payload = ExecutionResultPayload(reply=result["reply"], result=result, turn=TURN)
    decision = WsEnvelope(
        type="dialogue.decision",
        payload={"target_agent_name": "scheduling_agent", "target_function_name": "plan"},
    )
    event = WsEnvelope(type="execution.result", payload=payload.model_dump(mode="json"))
    agent = answered(DECIDED, [decision, event], "s").agent
    assert agent is not None and agent.scheduling is not None and agent.scheduling.slots == []
    assert agent.scheduling.questions and "没有找到" in agent.scheduling.draft_text
