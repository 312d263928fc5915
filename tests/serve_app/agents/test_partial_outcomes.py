"""The partial-request rule on the WebSocket of a pack with agents (serve_app/agents/outcomes.py): the frame's last
result — one step's, or the summary of several — ends with the sentence naming what was not done; a frame that
pauses on a write leaves it to the decision, which said it already."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

from engine.conversation.agent_runner import Run, report, start
from engine.conversation.execution import Shown
from engine.deadline import Deadline
from protocol.http_chat import ChatResponse, TurnStatus
from protocol.workflow import NotDone
from serve_app.agents.log import Outbox
from serve_app.agents.outcomes import finish
from tests.serve_app.agents.test_steps import step
from tests.support.fakes import Rig

NOT_DONE = [NotDone(text="帮我订一张机票", reason="outside_catalog")]
SAID = "订一张机票不在我能帮你安排的范围里。"


async def frame(run: Run) -> list[tuple[str, dict, uuid.UUID | None]]:
    async def commit(out, deadline) -> None:
        return None

    async def send(event) -> None:
        return None

    agent = SimpleNamespace(turns=SimpleNamespace(engine=Rig("timeflow").engine), commit=commit)
    out = Outbox(uuid.uuid4(), "input:m1", send)
    response = ChatResponse(session_id="s", reply="收到。" + SAID, status=TurnStatus.decided, not_done=NOT_DONE)
    await finish(agent, SimpleNamespace(), out, run, Deadline(5000.0), response)  # type: ignore[arg-type]
    return out.events


async def test_one_steps_result_ends_naming_what_was_not_done():
    inp = step("schedule_todo_agent", "query", "查一下明天有什么安排")
    workflow = start([inp])
    workflow.steps = []
    shown = Shown(reply="明天没有安排。", result={}, status="completed")
    events = await frame(Run(ran=[(inp, shown)], workflow=workflow))
    assert [(t, p["reply"]) for t, p, _ in events] == [("execution.result", "明天没有安排。" + SAID)]
    assert events[0][1]["turn"]["not_done"] == [{"text": "帮我订一张机票", "reason": "outside_catalog"}]


async def test_the_summary_of_several_steps_ends_naming_what_was_not_done():
    first, second = step("schedule_todo_agent", "query", "查一下日程"), step("review_agent", "review", "复盘")
    workflow = start([first, second])
    workflow.steps = []
    ran = []
    for inp, said in ((first, "明天没有安排。"), (second, "这周做得不错。")):
        report(workflow, inp, "completed", said)
        ran.append((inp, Shown(reply=said, result={}, status="completed")))
    events = await frame(Run(ran=ran, workflow=workflow))
    replies = [p["reply"] for _, p, _ in events]
    assert replies[:2] == ["明天没有安排。", "这周做得不错。"] and replies[-1].endswith(SAID) and len(replies) == 3
