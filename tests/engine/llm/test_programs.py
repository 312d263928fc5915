"""The DSPy programs over a fake language model: what each sends (its output schema, its priority, inside the
deadline), what it returns, and what it refuses. No model is built or served."""

from __future__ import annotations

import asyncio
import json
import os
import time

import pytest

from engine.deadline import Deadline
from engine.llm.dspy_engine import LanguageModelEngine, LmCall, dspy_lm, lm_call
from engine.llm.lm import LmReply, LmRequest
from engine.llm.programs import perception, router
from tests.support.fakes import FakeLm

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
MODULES = ["EmotionSupport", "Scheduling", "Feedback", "Summary"]
FUNCTIONS = {"schedule_todo_agent": ["create", "update", "delete", "query"], "review_agent": ["review"]}


class Scripted(FakeLm):
    """Answers each request with the next scripted JSON object."""

    def __init__(self, *answers: dict, **kw) -> None:
        super().__init__(**kw)
        self.answers = list(answers)

    async def complete(self, request: LmRequest) -> LmReply:
        self.text = json.dumps(self.answers.pop(0), ensure_ascii=False)
        return await super().complete(request)


def run(program, lm, deadline=None, **inputs):
    return program.run(
        dspy_lm(lm, max_tokens=64), deadline=deadline or Deadline(5000), stage="agent", budget_s=2.0, **inputs
    )


async def test_the_router_asks_under_a_schema_whose_modules_are_closed_and_returns_the_pipeline():
    lm = Scripted({"pipeline_description": "先安抚情绪，再安排明天。", "pipeline": ["EmotionSupport", "Scheduling"]})
    deadline = Deadline(5000)
    out = await run(router(MODULES), lm, deadline, dialog_history="", user_input="最近好累，帮我排一下明天")
    assert out == {"pipeline_description": "先安抚情绪，再安排明天。", "pipeline": ["EmotionSupport", "Scheduling"]}
    request = lm.requests[0]
    assert request.json_schema["properties"]["pipeline"]["items"]["enum"] == MODULES
    assert set(request.json_schema["required"]) == {"pipeline_description", "pipeline"}
    assert "最近好累" in request.messages[-1]["content"] and request.messages[0]["role"] == "system"
    assert "agent" in deadline.stages_ms, "the call was timed as its stage"


@pytest.mark.parametrize("pipeline", [["Teleport"], [], ["Scheduling", "Scheduling"]])
async def test_a_router_pipeline_outside_the_modules_is_refused(pipeline):
    lm = Scripted({"pipeline_description": "…", "pipeline": pipeline})
    assert await run(router(MODULES), lm, dialog_history="", user_input="帮我排一下") is None


async def test_a_late_program_returns_nothing_and_its_request_is_aborted():
    lm = FakeLm("{}", delay=5.0)
    t0 = time.perf_counter()
    out = await router(MODULES).run(
        dspy_lm(lm, max_tokens=64),
        deadline=Deadline(5000),
        stage="agent",
        budget_s=0.2,
        dialog_history="",
        user_input="帮我排一下",
    )
    assert out is None and time.perf_counter() - t0 < 1.5
    assert lm.cancelled and lm.aborted == [lm.requests[0].request_id]


async def test_perception_names_an_agent_and_one_of_its_own_functions():
    ok = Scripted(
        {
            "target_agent_name": "schedule_todo_agent",
            "target_function_name": "create",
            "parsed_params": {"title": "组会"},
            "time_range": None,
            "missing_fields": ["when"],
        }
    )
    out = await run(perception(FUNCTIONS), ok, recent_messages="", user_input="帮我记个组会", capabilities="…")
    assert out["target_function_name"] == "create" and out["missing_fields"] == ["when"]
    schema = ok.requests[0].json_schema["properties"]
    assert schema["target_agent_name"]["enum"] == sorted(FUNCTIONS)
    wrong = Scripted(
        {
            "target_agent_name": "review_agent",
            "target_function_name": "create",
            "parsed_params": {},
            "time_range": None,
            "missing_fields": [],
        }
    )
    assert await run(perception(FUNCTIONS), wrong, recent_messages="", user_input="复盘", capabilities="…") is None


async def test_no_model_call_without_a_deadline():
    import dspy

    with dspy.context(lm=dspy_lm(FakeLm("{}"), max_tokens=8), adapter=dspy.JSONAdapter()):
        with pytest.raises(Exception, match="outside lm_call"):
            await dspy.Predict("question -> answer").acall(question="?")


class Streaming(FakeLm):
    async def stream(self, request):
        self.requests.append(request)
        try:
            for n, piece in enumerate(("你", "好", "呀"), 1):
                await asyncio.sleep(self.delay)
                yield {
                    "text": piece,
                    "finish_reason": "stop" if n == 3 else None,
                    "prompt_tokens": 4,
                    "completion_tokens": n,
                }
        finally:
            self.closed = True


async def test_the_engine_streams_the_models_deltas_and_closes_a_late_stream():
    from dspy.lm15 import Message, Request

    request = Request(model="baton/planner", messages=(Message.user("hi"),))
    lm = Streaming()
    with lm_call(LmCall(deadline=Deadline(5000), stage="agent", budget_s=1.0)):
        events = [e async for e in LanguageModelEngine(lm, max_tokens=8).stream(request)]
    assert [e.type for e in events] == ["start", "delta", "delta", "delta", "end"]
    assert "".join(e.delta.text for e in events if e.type == "delta") == "你好呀" and events[-1].finish_reason == "stop"
    late = Streaming(delay=0.5)
    from engine.deadline import StageTimeout

    with lm_call(LmCall(deadline=Deadline(5000), stage="agent", budget_s=0.2)), pytest.raises(StageTimeout):
        [e async for e in LanguageModelEngine(late, max_tokens=8).stream(request)]
    assert late.closed and late.aborted == [late.requests[0].request_id]
