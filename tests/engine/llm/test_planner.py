"""The LLM planner over the shipped cockpit pack and its prompt files, with a fake language model that records
what it was asked: the request it gets, the hooks around it, validation of its answer, and the deadline (a
late model is aborted and the turn degrades). No model is built or served."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import datetime
from functools import cache
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from config.settings import load_settings
from engine.deadline import Deadline, StageTimeout
from engine.llm.compaction import CompactionConfig, ContextCompactor
from engine.llm.hooks import HookChain, HookContext, build_chain
from engine.llm.lm import LanguageModel, LmRequest, abort_quietly, complete_within
from engine.llm.plan_schema import executable_intents, plan_json_schema
from engine.llm.plan_validation import RejectedPlan, ValidatedPlan
from engine.llm.planner import NAME, TURN_PART, LlmWorkflowPlanner
from engine.llm.prompts import PromptSet, catalog_of
from engine.pack import find_pack, load_pack
from engine.slots import SlotLimits
from tests.support.fakes import FakeLm

ROOT = Path(__file__).resolve().parents[3]
TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2025, 6, 2, 9, 0, tzinfo=TZ)  # a Monday morning
PHONE = "13812345678"


@cache
def shipped(name: str = "cockpit"):
    """(pack, pack dir, settings) as the app loads them, without building the models."""
    settings = load_settings(ROOT / "config", {"BATON_PACK": name, "BATON_STATE_DIR": str(ROOT / "var" / "_no_state_")})
    pack_dir = find_pack(name, shipped_dir=settings.packs_dir, state_dir=settings.state_dir)
    return load_pack(pack_dir), pack_dir, settings


class Recorder:
    def __init__(self, name: str, events: list[str]):
        self.name, self.events = name, events
        self.trace_ids: list[str | None] = []

    async def before_llm_call(self, ctx: HookContext) -> None:
        self.events.append(f"before:{self.name}")
        self.trace_ids.append(ctx.trace_id)

    async def after_llm_call(self, ctx: HookContext) -> None:
        self.events.append(f"after:{self.name}")
        self.trace_ids.append(ctx.trace_id)


def planner(
    lm: FakeLm, hooks: HookChain | None = None, compactor: ContextCompactor | None = None, pack_name: str = "cockpit"
) -> LlmWorkflowPlanner:
    pack, pack_dir, settings = shipped(pack_name)
    limits = SlotLimits(temperature_min=settings.slots.temperature_min, temperature_max=settings.slots.temperature_max)
    return LlmWorkflowPlanner(
        lm,
        pack,
        PromptSet.load(pack_dir, settings.prompts),
        hooks or HookChain([]),
        compactor or ContextCompactor(),
        max_steps=settings.planner.max_steps,
        tz=TZ,
        limits=limits,
    )


def step(intent_id: str, slots=None, depends_on=(), condition=None) -> dict:
    return {
        "intent_id": intent_id,
        "slots": slots or {},
        "depends_on": list(depends_on),
        "condition": condition,
        "requires_confirmation": False,
    }


WINDOW_THEN_AC = json.dumps(
    {"type": "sequence", "steps": [step("cabin_window_open"), step("cabin_set_ac", {"temperature": 22})]}
)
SAID = "先打开车窗，再把空调调到22度"


async def plan(lm: FakeLm, text: str = SAID, *, budget_s: float = 2.0, deadline: Deadline | None = None, **kw):
    deadline = deadline or Deadline(budget_ms=10_000)
    outcome = await planner(lm, **{k: kw.pop(k) for k in ("hooks", "compactor") if k in kw}).plan(
        text, deadline=deadline, budget_s=budget_s, now=NOW, **kw
    )
    return outcome, deadline


async def test_a_valid_reply_becomes_a_validated_plan_with_the_intents_in_order():
    outcome, deadline = await plan(FakeLm(WINDOW_THEN_AC))
    assert isinstance(outcome.plan, ValidatedPlan) and outcome.accepted
    steps = outcome.plan.workflow.steps
    assert [s.intent_id for s in steps] == ["cabin_window_open", "cabin_set_ac"]
    assert steps[1].slots == {"temperature": 22} and steps[1].plugin_id
    assert outcome.plan.workflow.planner == NAME
    assert outcome.rejected is None and not outcome.timed_out and outcome.error is None
    assert outcome.reply is not None and outcome.reply.completion_tokens == 40
    assert deadline.degraded == [] and "planner" in deadline.stages_ms
    as_plan = outcome.to_plan()
    assert as_plan.accepted and as_plan.planner == NAME and as_plan.workflow is outcome.plan.workflow


async def test_the_request_carries_the_catalog_schema_priority_and_rendered_prompt():
    lm = FakeLm(WINDOW_THEN_AC)
    outcome, _ = await plan(
        lm, history=[{"role": "user", "content": "有点热"}, {"role": "assistant", "content": "好的"}]
    )
    pack, _, settings = shipped()
    [request] = lm.requests
    assert request.json_schema == plan_json_schema(pack, max_steps=settings.planner.max_steps)
    enum = request.json_schema["properties"]["steps"]["items"]["properties"]["intent_id"]["enum"]
    assert enum == executable_intents(pack) == [i["id"] for i in catalog_of(pack)]
    assert request.priority == 0 and request.max_tokens == 256 and request.temperature == 0.0
    assert request.request_id == outcome.request_id
    system = request.messages[0]
    assert system["role"] == "system"
    assert "打开车窗（cabin_window_open）" in system["content"] and "调节空调温度（cabin_set_ac）" in system["content"]
    assert "只输出一个 JSON 对象" in system["content"] and "2025年6月2日 星期一 09:00" in system["content"]
    assert [m["role"] for m in request.messages] == ["system", "user", "assistant", "user"]
    assert request.messages[-1] == {"role": "user", "content": SAID}


@pytest.mark.parametrize("name", ["cockpit", "timeflow"])
async def test_what_changes_between_calls_comes_after_the_unchanging_prompt(name):
    """The engine keeps a prompt's unchanged beginning cached, and its sliding-window layers only up to a place
    where prompts were seen to differ: everything that changes (the time by the minute, then the user's profile
    and recalled messages) starts at one place, so two users' calls at different times, one with memory, share
    everything up to it; the persona files (replies' business) are not in a plan's prompt."""
    pack, _, _ = shipped(name)
    lm = FakeLm(json.dumps({"type": "single", "steps": [step(executable_intents(pack)[0])]}))
    p = planner(lm, pack_name=name)
    later = NOW.replace(hour=18, minute=47)
    await p.plan("随便说一句", deadline=Deadline(budget_ms=10_000), budget_s=2.0, now=NOW)
    await p.plan(
        "随便说一句",
        deadline=Deadline(budget_ms=10_000),
        budget_s=2.0,
        now=later,
        memory=["上次说过的话"],
        user_profile={"称呼": "小王"},
    )
    first, second = (r.messages[0]["content"] for r in lm.requests)
    shared = len(first.split(TURN_PART)[0] + TURN_PART)
    assert first[:shared] == second[:shared] and first[shared:].startswith(f"{NOW.year}年")
    assert "只输出一个 JSON 对象" in first[:shared] and first[shared:].index("# 用户") > 0
    assert all(f"（{i['id']}）" in first[:shared] for i in catalog_of(pack))
    assert "09:00" in first[shared:] and "18:47" in second[shared:] and "上次说过的话" in second[shared:]
    assert "小王" in second[shared:] and "小王" not in first
    assert "# 角色" not in first and "# 角色" not in second


@pytest.mark.parametrize("name", ["cockpit", "timeflow"])
async def test_every_shipped_pack_renders_the_planning_prompt_over_its_catalog(name):
    pack, _, _ = shipped(name)
    first = executable_intents(pack)[0]
    lm = FakeLm(json.dumps({"type": "single", "steps": [step(first)]}))
    outcome = await planner(lm, pack_name=name).plan(
        "随便说一句", deadline=Deadline(budget_ms=10_000), budget_s=2.0, now=NOW
    )
    system = lm.requests[0].messages[0]["content"]
    assert all(f"（{i['id']}）" in system for i in catalog_of(pack)) and "只输出一个 JSON 对象" in system
    assert "{{" not in system and "{%" not in system
    assert outcome.plan is not None and outcome.plan.workflow.steps[0].intent_id == first


async def test_each_call_gets_a_fresh_request_id():
    lm = FakeLm(WINDOW_THEN_AC)
    p = planner(lm)
    for _ in range(2):
        await p.plan(SAID, deadline=Deadline(budget_ms=10_000), budget_s=2.0, now=NOW)
    assert len({r.request_id for r in lm.requests}) == 2


async def test_hooks_run_before_in_order_and_after_in_reverse_with_trace_id_and_redaction():
    events: list[str] = []
    first, last = Recorder("first", events), Recorder("last", events)
    builtins = build_chain([{"name": "trace_id"}, {"name": "redact"}])
    history = [{"role": "user", "content": f"我的电话是{PHONE}"}]
    original = json.loads(json.dumps(history))

    class Spy(FakeLm):
        async def complete(self, request):
            events.append("llm")
            return await super().complete(request)

    lm = Spy(WINDOW_THEN_AC)
    outcome, _ = await plan(
        lm, f"打开车窗，然后打电话给{PHONE}", hooks=HookChain([first, *builtins.hooks, last]), history=history
    )
    assert events == ["before:first", "before:last", "llm", "after:last", "after:first"]
    assert outcome.trace_id and last.trace_ids == [outcome.trace_id, outcome.trace_id]
    assert first.trace_ids[0] is None  # the trace_id hook comes after it
    sent = lm.requests[0].messages
    assert all(PHONE not in m["content"] for m in sent)
    assert "[手机号]" in sent[-1]["content"] and "[手机号]" in sent[1]["content"]
    assert history == original  # the caller's history is not rewritten
    assert outcome.plan is not None


async def test_an_unknown_intent_is_rejected_and_never_planned():
    reply = json.dumps({"type": "sequence", "steps": [step("cabin_window_open"), step("cabin_fly_away")]})
    outcome, deadline = await plan(FakeLm(reply))
    assert outcome.plan is None and not outcome.accepted
    assert isinstance(outcome.rejected, RejectedPlan)
    assert any("cabin_fly_away" in r for r in outcome.rejected.reasons)
    assert outcome.reply is not None and outcome.reply.text == reply
    assert deadline.degraded == []  # the model answered: no degradation, the turn keeps the local decision
    assert not outcome.to_plan().accepted and "rejected" in outcome.reason


@pytest.mark.parametrize("reply", ["这不是计划", "", '{"type": "sequence", "steps": []}', "[1, 2]", "{" * 5000])
async def test_garbage_replies_are_rejected_without_raising(reply):
    outcome, _ = await plan(FakeLm(reply))
    assert outcome.plan is None and outcome.rejected is not None and outcome.rejected.reasons


async def test_prose_and_fences_around_the_json_are_accepted():
    for reply in (f"好的，计划如下：\n{WINDOW_THEN_AC}\n请确认。", f"```json\n{WINDOW_THEN_AC}\n```"):
        outcome, _ = await plan(FakeLm(reply))
        assert outcome.plan is not None, outcome.rejected
        assert [s.intent_id for s in outcome.plan.workflow.steps] == ["cabin_window_open", "cabin_set_ac"]


async def test_a_slow_model_is_aborted_and_the_turn_degrades_within_the_budget():
    lm = FakeLm(WINDOW_THEN_AC, delay=5.0)
    started = time.monotonic()
    outcome, deadline = await plan(lm, budget_s=0.2)
    elapsed = time.monotonic() - started
    assert outcome.timed_out and outcome.plan is None and outcome.rejected is None and outcome.reply is None
    assert lm.cancelled and lm.aborted == [lm.requests[0].request_id] == [outcome.request_id]
    assert deadline.degraded == ["planner"]
    assert elapsed < 0.2 + 0.1
    assert outcome.to_plan().accepted is False


async def test_the_turns_time_left_caps_the_budget():
    lm = FakeLm(WINDOW_THEN_AC, delay=5.0)
    started = time.monotonic()
    outcome, deadline = await plan(lm, budget_s=5.0, deadline=Deadline(budget_ms=150))
    assert outcome.timed_out and deadline.degraded == ["planner"]
    assert time.monotonic() - started < 0.15 + 0.1


async def test_no_time_left_sends_nothing():
    lm = FakeLm(WINDOW_THEN_AC)
    outcome, deadline = await plan(lm, deadline=Deadline(budget_ms=1000, started=time.time() - 2))
    assert outcome.timed_out and lm.requests == [] and lm.aborted == [] and deadline.degraded == ["planner"]


async def test_a_failing_model_degrades_without_raising():
    outcome, deadline = await plan(FakeLm(error=ConnectionError("planner replica gone")))
    assert outcome.plan is None and not outcome.timed_out and "ConnectionError" in (outcome.error or "")
    assert deadline.degraded == ["planner"]


async def test_a_long_history_is_compacted_before_the_call():
    lm = FakeLm(WINDOW_THEN_AC)
    history = [
        {"role": "user" if n % 2 == 0 else "assistant", "content": f"第{n}句话。" + "很长" * 100} for n in range(20)
    ]
    compactor = ContextCompactor(CompactionConfig(max_chars=6000, keep_recent=2))
    outcome, _ = await plan(lm, history=history, compactor=compactor)
    sent = lm.requests[0].messages
    assert outcome.plan is not None
    assert sent[1]["role"] == "system" and sent[1]["content"].startswith("此前对话摘要：")
    # prompt, summary, then the last keep_recent=2 messages verbatim: the last of the history and the turn
    assert len(sent) == 4 and sent[2] == history[-1] and sent[-1]["content"] == SAID


async def test_a_slow_summarizer_does_not_eat_the_plan_budget():
    async def summarizer(messages, max_chars):
        await asyncio.sleep(5)
        return "不会用到"

    lm = FakeLm(WINDOW_THEN_AC)
    history = [{"role": "user", "content": f"第{n}句话。" + "很长" * 100} for n in range(20)]
    compactor = ContextCompactor(CompactionConfig(max_chars=6000, keep_recent=2), summarizer)
    started = time.monotonic()
    outcome, _ = await plan(lm, history=history, compactor=compactor, budget_s=0.4)
    assert outcome.plan is not None and time.monotonic() - started < 0.4
    assert "用户说过" in lm.requests[0].messages[1]["content"]  # the extractive summary


# ---- complete_within / abort ------------------------------------------------------------------------------


def request(request_id: str = "r1") -> LmRequest:
    return LmRequest(
        messages=[{"role": "user", "content": "你好"}],
        json_schema=None,
        max_tokens=8,
        temperature=0.0,
        request_id=request_id,
    )


async def test_the_fake_is_a_language_model_and_complete_within_times_the_stage():
    lm = FakeLm("好")
    assert isinstance(lm, LanguageModel)
    deadline = Deadline(budget_ms=1000)
    reply = await complete_within(lm, request(), deadline=deadline, stage="agent", budget_s=0.5)
    assert reply.text == "好" and "agent" in deadline.stages_ms and lm.aborted == []


async def test_a_cancelled_caller_aborts_the_request():
    lm = FakeLm("好", delay=5.0)
    task = asyncio.create_task(
        complete_within(lm, request("r9"), deadline=Deadline(budget_ms=10_000), stage="planner", budget_s=5.0)
    )
    await lm.started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert lm.aborted == ["r9"] and lm.cancelled


async def test_a_timeout_propagates_when_the_abort_fails_and_a_slow_abort_goes_on_alone():
    class BadAbort(FakeLm):
        async def abort(self, request_id):
            raise RuntimeError("server gone")

    with pytest.raises(StageTimeout):
        await complete_within(
            BadAbort(delay=5.0), request(), deadline=Deadline(budget_ms=10_000), stage="planner", budget_s=0.05
        )

    class SlowAbort(FakeLm):
        async def abort(self, request_id):
            await asyncio.sleep(0.2)
            self.aborted.append(request_id)

    lm = SlowAbort()
    started = time.monotonic()
    assert await abort_quietly(lm, "r2", timeout_s=0.05) is False
    assert time.monotonic() - started < 0.15 and lm.aborted == []
    await asyncio.sleep(0.3)
    assert lm.aborted == ["r2"]  # the caller stopped waiting; the abort still reached the server


def test_a_request_needs_an_id_and_room_for_tokens():
    with pytest.raises(ValueError):
        LmRequest(messages=[], json_schema=None, max_tokens=0, temperature=0.0, request_id="x")
    with pytest.raises(ValueError):
        LmRequest(messages=[], json_schema=None, max_tokens=8, temperature=0.0, request_id="")
