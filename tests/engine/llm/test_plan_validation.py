"""LLM plans checked against the shipped packs before anything runs (seed 003 §18.2–§18.3), and the JSON schema
given to vLLM's structured outputs. The packs are loaded as the app loads them; no model is built or served."""

from __future__ import annotations

import copy
import json
import os
from datetime import datetime
from functools import cache
from pathlib import Path
from zoneinfo import ZoneInfo

import jsonschema
import pytest

from config.settings import load_settings
from engine.clauses import ClauseSplitter
from engine.llm.plan_schema import CONDITION_OPERATORS, executable_intents, plan_json_schema
from engine.llm.plan_validation import RejectedPlan, ValidatedPlan, validate_plan
from engine.pack import SPECIAL_INTENTS, find_pack, load_pack
from engine.slot_filling import SlotFiller
from engine.slots import SlotLimits
from engine.workflow.analysis import ClauseAnalyzer, ClauseScore
from engine.workflow.planners import HeuristicWorkflowPlanner, StepBuilder, TurnAnalysis
from protocol.workflow import StepCondition, Workflow, WorkflowStep, WorkflowType

ROOT = Path(__file__).resolve().parents[3]
STATE_DIR = Path(os.environ.get("BATON_STATE_DIR") or ROOT / "var").resolve()
TZ = ZoneInfo("Asia/Shanghai")
NOW = datetime(2025, 6, 2, 9, 0, tzinfo=TZ)  # a Monday morning


@cache
def shipped(name: str):
    """(pack, settings) as tests/support/packs.py's built_pack loads them, without building the models."""
    settings = load_settings(ROOT / "config", {"BATON_PACK": name, "BATON_STATE_DIR": str(STATE_DIR)})
    return load_pack(find_pack(name, shipped_dir=settings.packs_dir, state_dir=settings.state_dir)), settings


def limits(settings) -> SlotLimits:
    return SlotLimits(temperature_min=settings.slots.temperature_min, temperature_max=settings.slots.temperature_max)


def check(raw, name: str = "cockpit", **kw):
    pack, settings = shipped(name)
    return validate_plan(raw, pack, max_steps=settings.planner.max_steps, tz=TZ, now=NOW, limits=limits(settings), **kw)


def step(intent_id: str, slots=None, depends_on=(), condition=None, confirm: bool = False) -> dict:
    return {
        "intent_id": intent_id,
        "slots": slots or {},
        "depends_on": list(depends_on),
        "condition": condition,
        "requires_confirmation": confirm,
    }


def plan(kind: str, *steps: dict) -> dict:
    return {"type": kind, "steps": list(steps)}


WINDOW_THEN_AC = plan("sequence", step("cabin_window_open"), step("cabin_set_ac", {"temperature": 22}))
PENDING = {"step": 1, "field": "order_status", "op": "equals", "value": "pending_shipment"}
QUERY_THEN_CANCEL = plan(
    "conditional",
    step("cs_query_order", {"order_id": "A12345"}),
    step("cs_cancel_order", {"order_id": "A12345"}, depends_on=[1], condition=PENDING),
)


def heuristic(text: str, clauses: list[ClauseScore] | None = None) -> Workflow:
    """What the heuristic planner builds for `text`; `clauses`: the clause analysis given (the analyzer alone,
    without the served classifier, does not pick every intent)."""
    pack, settings = shipped("cockpit")
    fill = SlotFiller(limits=limits(settings), tz=TZ, clock=lambda: NOW)
    if clauses is None:
        analyzer = ClauseAnalyzer(pack, settings.planner)
        clauses = [
            analyzer.analyze(c, classifier=[], detector=[]) for c in ClauseSplitter(settings.clauses).clauses(text)
        ]
    found = HeuristicWorkflowPlanner(pack, StepBuilder(pack, fill.extract), max_steps=settings.planner.max_steps).plan(
        TurnAnalysis(text=text, clauses=clauses)
    )
    assert found.accepted and found.workflow is not None, found.reason
    return found.workflow


def same_steps(a: Workflow, b: Workflow) -> None:
    assert a.type == b.type
    # `clause` is the words a local step came from; a model's step has none
    assert [s.model_dump(exclude={"clause"}) for s in a.steps] == [s.model_dump(exclude={"clause"}) for s in b.steps]


# ---- plans that run -----------------------------------------------------------------------------


def test_a_two_step_cockpit_plan_is_the_workflow_the_heuristic_planner_builds():
    result = check(WINDOW_THEN_AC)
    assert isinstance(result, ValidatedPlan), result
    assert result.normalisations == []
    assert result.workflow.planner == "llm"
    same_steps(result.workflow, heuristic("打开车窗然后把空调调到22度"))
    assert [(s.step_id, s.intent_id, s.plugin_id, s.slots) for s in result.workflow.steps] == [
        ("s1", "cabin_window_open", "plugin.cabin.window.open", {}),
        ("s2", "cabin_set_ac", "plugin.cabin.ac_control", {"temperature": 22}),
    ]


def test_a_conditional_plan_depends_on_its_query_and_its_cancel_asks_first():
    result = check(QUERY_THEN_CANCEL)
    assert isinstance(result, ValidatedPlan), result
    expected = Workflow(
        type=WorkflowType.conditional,
        planner="llm",
        steps=[
            WorkflowStep(
                step=1,
                step_id="s1",
                intent_id="cs_query_order",
                plugin_id="plugin.order.query",
                slots={"order_id": "A12345"},
            ),
            WorkflowStep(
                step=2,
                step_id="s2",
                intent_id="cs_cancel_order",
                plugin_id="plugin.order.cancel",
                slots={"order_id": "A12345"},
                depends_on=["s1"],
                requires_confirmation=True,
                condition=StepCondition(
                    source_step="s1", field="order_status", operator="equals", value="pending_shipment"
                ),
            ),
        ],
    )
    assert result.workflow == expected
    assert any("needs confirmation" in n for n in result.normalisations)
    text = "查一下订单A12345，如果还没发货就帮我取消"
    same_steps(
        result.workflow,
        heuristic(
            text,
            [
                ClauseScore(text="查一下订单A12345", selected=["cs_query_order"]),
                ClauseScore(text="帮我取消", condition="还没发货", selected=["cs_cancel_order"]),
            ],
        ),
    )


def test_json_in_prose_or_a_fence_is_read():
    body = json.dumps(WINDOW_THEN_AC, ensure_ascii=False)
    for reply, how in [
        (f"好的，计划如下：\n```json\n{body}\n```\n请确认。", "fence"),
        (f"```\n{body}\n```", "fence"),
        (f"计划是 {body} 以上。", "first JSON object"),
        (f"想一想 {{不是JSON}} 然后：{body}", "first JSON object"),
        (body, None),
    ]:
        result = check(reply)
        assert isinstance(result, ValidatedPlan), (reply, result)
        assert result.workflow.steps[1].slots == {"temperature": 22}
        assert any(how in n for n in result.normalisations) if how else result.normalisations == []


def test_model_slips_are_normalised_and_said():
    raw = {
        "type": "single",
        "steps": [
            {"step": 0, "intent_id": " Cabin_Window_Open ", "slots": {}, "plugin_id": "rm -rf"},
            {"step": 1, "intent_id": "cabin_window_open", "slots": {}},  # repeats the step before
            {"step": 2, "intent": "cabin_set_ac", "slots": {"temperature": "二十二度"}, "depends_on": ["s1", 1, 0]},
        ],
    }
    result = check(raw)
    assert isinstance(result, ValidatedPlan), result
    wf = result.workflow
    assert wf.type == WorkflowType.sequence
    assert [(s.step, s.step_id, s.intent_id, s.plugin_id) for s in wf.steps] == [
        (1, "s1", "cabin_window_open", "plugin.cabin.window.open"),
        (2, "s2", "cabin_set_ac", "plugin.cabin.ac_control"),
    ]
    assert wf.steps[1].slots == {"temperature": 22} and wf.steps[1].depends_on == ["s1"]
    said = " | ".join(result.normalisations)
    for words in [
        "renumbered",
        "read as cabin_window_open",
        "ignored ['plugin_id']",
        "repeats step 1: dropped",
        "'二十二度' read as 22",
        "type single read as sequence",
    ]:
        assert words in said, (words, said)


def test_a_bare_list_of_steps_is_read_as_the_plan():
    for raw in (WINDOW_THEN_AC["steps"], json.dumps(WINDOW_THEN_AC["steps"])):
        result = check(raw)
        assert isinstance(result, ValidatedPlan), result
        same_steps(result.workflow, check(WINDOW_THEN_AC).workflow)


def test_a_condition_becomes_a_dependency_and_operators_are_read():
    cond = {"step": "s1", "field": "order_status", "operator": "==", "value": "pending_shipment"}
    result = check(
        plan(
            "conditional",
            step("cs_query_order", {"order_id": "订单a12345"}),
            step("cs_cancel_order", {"order_id": "A12345"}, condition=cond, confirm=True),
        )
    )
    assert isinstance(result, ValidatedPlan), result
    cancel = result.workflow.steps[1]
    assert cancel.depends_on == ["s1"] and cancel.condition.operator == "equals"
    assert result.workflow.steps[0].slots == {"order_id": "A12345"}
    assert any("whose result its condition reads" in n for n in result.normalisations)


def test_the_users_words_fill_slots_and_the_packs_conditional_hint():
    """§18.3: the model's slots merged with the utterance's; a conditional utterance gets the pack's hint."""
    text = "查一下订单A12345，如果还没发货就帮我取消"
    result = check(plan("sequence", step("cs_query_order"), step("cs_cancel_order")), text=text)
    assert isinstance(result, ValidatedPlan), result
    assert result.workflow.type == WorkflowType.conditional
    same_steps(result.workflow, check(QUERY_THEN_CANCEL).workflow)


def test_a_conditional_the_executor_cannot_check_asks_the_driver():
    result = check(plan("conditional", step("cabin_wiper_on"), step("cabin_window_close", depends_on=[1])))
    assert isinstance(result, ValidatedPlan), result
    assert result.workflow.type == WorkflowType.conditional
    assert [s.requires_confirmation for s in result.workflow.steps] == [False, True]


def test_timeflow_plans_resolve_datetimes_and_bind_agents():
    result = check(
        plan(
            "sequence",
            step("schedule_create", {"when": "明天下午三点", "title": "开会"}),
            step(
                "schedule_delete",
                {
                    "when": {
                        "start": "2025-06-04T10:00:00+08:00",
                        "end": "2025-06-04T11:00:00+08:00",
                        "text": "周三十点",
                        "all_day": False,
                    }
                },
            ),
            step("schedule_query", {"when": "2025-06-05T09:30"}),
        ),
        "timeflow",
    )
    assert isinstance(result, ValidatedPlan), result
    create, delete, query = result.workflow.steps
    assert (create.agent, create.action, create.plugin_id) == ("schedule_todo_agent", "create", None)
    assert create.slots["when"]["start"] == "2025-06-03T15:00:00+08:00" and create.slots["title"] == "开会"
    assert delete.requires_confirmation, "schedule_delete is confirm: true in the pack"
    assert query.slots["when"]["start"] == "2025-06-05T09:30:00+08:00"
    assert query.slots["when"]["end"] == "2025-06-05T10:30:00+08:00"


# ---- plans that never run -----------------------------------------------------------------------


def _with(change):
    raw = copy.deepcopy(WINDOW_THEN_AC)
    change(raw)
    return raw


@pytest.mark.parametrize(
    "raw,reason",
    [
        (_with(lambda p: p["steps"][0].update(intent_id="cabin_teleport")), "step 1: unknown intent 'cabin_teleport'"),
        (_with(lambda p: p["steps"][0].update(intent_id="__social__")), "__social__ is not an executable intent"),
        (
            _with(lambda p: p["steps"][0].update(intent_id="__OUT_OF_SCOPE__")),
            "__out_of_scope__ is not an executable intent",
        ),
        (_with(lambda p: p["steps"][0].update(intent_id=None)), "step 1 names no intent_id"),
        (
            _with(lambda p: p["steps"][0].update(slots={"temperature": 22})),
            "cabin_window_open has no slot 'temperature'",
        ),
        (_with(lambda p: p["steps"][1]["slots"].update(temperature=35)), "35° is outside 16–32°"),
        (_with(lambda p: p["steps"][1]["slots"].update(temperature="warm")), "'warm' is no temperature"),
        (_with(lambda p: p["steps"][1]["slots"].update(temperature=True)), "True is no temperature"),
        (_with(lambda p: p["steps"][0].update(depends_on=[2])), "step 1 refers to step 2, which comes later"),
        (
            _with(lambda p: p["steps"][0].update(condition={**PENDING, "step": 2})),
            "step 1 refers to step 2, which comes later",
        ),
        (
            _with(lambda p: [p["steps"][0].update(depends_on=[2]), p["steps"][1].update(depends_on=[1])]),
            "steps 1 → 2 → 1 form a cycle",
        ),
        (_with(lambda p: p["steps"][1].update(depends_on=[2])), "steps 2 → 2 form a cycle"),
        (
            _with(lambda p: p["steps"][1].update(depends_on=[7])),
            "step 2 refers to step 7, which the plan does not have",
        ),
        (_with(lambda p: p["steps"][1].update(depends_on="first")), "depends_on 'first' is not a list of step numbers"),
        (_with(lambda p: p["steps"][1].update(condition={**PENDING, "op": "greater"})), "condition operator 'greater'"),
        (
            _with(lambda p: p["steps"][1].update(condition={**PENDING, "value": {"a": 1}})),
            "does not fit operator equals",
        ),
        (
            _with(
                lambda p: p["steps"].extend(step(i) for i in ["cabin_door_lock", "cabin_lights_on", "cabin_wiper_on"])
            ),
            "5 steps: a plan has at most 4",
        ),
        (plan("sequence", step("cs_query_order", {"order_id": "abc"})), "'abc' is no order id"),
        (plan("sequence", step("schedule_create", {"when": "明天"})), "intent 'schedule_create'"),  # another pack's
        # reasons name the model's positions, even after a repeated step was dropped
        (
            plan(
                "sequence",
                step("cabin_window_open"),
                step("cabin_window_open"),
                step("cabin_ac_on", depends_on=[4]),
                step("cabin_set_ac", {"temperature": 22}),
            ),
            "step 3 refers to step 4, which comes later",
        ),
        ({"type": "sequence", "steps": []}, "the plan has no steps"),
        ({"type": "sequence"}, "the plan has no steps"),
        ({"type": "sequence", "steps": ["cabin_window_open"]}, "step 1 is not an object"),
        ("好的，我这就帮你打开车窗。", "the reply holds no JSON object"),
        ('{"type": "sequence", "steps": [', "the reply holds no JSON object"),
        ("   ", "the reply is empty"),
        ("42", "the plan is not a JSON object"),
        ("x" * 70_000, "the reply is over 64000 characters"),
    ],
)
def test_an_invalid_plan_is_rejected_with_its_reason(raw, reason):
    result = check(raw)
    assert isinstance(result, RejectedPlan), result
    assert any(reason in r for r in result.reasons), result.reasons


def test_every_fault_is_reported_at_once():
    raw = plan("sequence", step("cabin_teleport"), step("cabin_set_ac", {"temperature": 40, "fan": 3}))
    reasons = check(raw).reasons
    assert len(reasons) == 3, reasons


@pytest.mark.parametrize(
    "raw",
    [
        None,
        42,
        [],
        [1, 2],
        {"steps": "x"},
        {"steps": [{"intent_id": 5}]},
        {"steps": [{"intent_id": "cabin_set_ac", "slots": [22]}]},
        {"steps": [{"intent_id": "cabin_set_ac", "slots": {"temperature": float("nan")}}]},
        "[" * 50_000,
        '{"steps": [{"intent_id": "cabin_set_ac", "slots": {"temperature": 1e999}}]}',
    ],
)
def test_bad_model_output_never_raises(raw):
    assert isinstance(check(raw), RejectedPlan)


# ---- the schema ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["cockpit", "timeflow"])
def test_the_schema_enumerates_exactly_the_executable_intents(name):
    pack, settings = shipped(name)
    schema = plan_json_schema(pack, max_steps=settings.planner.max_steps)
    jsonschema.Draft202012Validator.check_schema(schema)
    items = schema["properties"]["steps"]["items"]
    assert set(items["properties"]["intent_id"]["enum"]) == {i.id for i in pack.intents} - set(SPECIAL_INTENTS)
    assert items["properties"]["intent_id"]["enum"] == executable_intents(pack)
    assert schema["properties"]["steps"]["maxItems"] == settings.planner.max_steps
    assert items["properties"]["condition"]["anyOf"][1]["properties"]["op"]["enum"] == ["equals", "not_equals", "in"]
    assert list(CONDITION_OPERATORS) == ["equals", "not_equals", "in"]
    assert "$ref" not in json.dumps(schema) and "$defs" not in json.dumps(schema)


def test_the_schema_admits_valid_plans_and_refuses_malformed_ones():
    pack, settings = shipped("cockpit")
    validator = jsonschema.Draft202012Validator(plan_json_schema(pack, max_steps=settings.planner.max_steps))
    for good in (WINDOW_THEN_AC, QUERY_THEN_CANCEL):
        validator.validate(good)
        assert isinstance(check(good), ValidatedPlan)
    bad = [
        _with(lambda p: p["steps"][0].update(intent_id="__social__")),
        _with(lambda p: p["steps"][0].update(intent_id="cabin_teleport")),
        _with(lambda p: p["steps"][0].pop("intent_id")),
        _with(lambda p: p.pop("steps")),
        _with(lambda p: p["steps"][0].update(plugin_id="x")),
        _with(lambda p: p["steps"][1].update(condition={**PENDING, "op": "greater"})),
        _with(lambda p: p["steps"][1].update(depends_on=[0])),
        _with(lambda p: p.update(type="parallel")),
        _with(lambda p: p["steps"].extend(step("cabin_door_lock") for _ in range(3))),
        {"type": "sequence", "steps": []},
    ]
    for raw in bad:
        assert not validator.is_valid(raw), raw
    # only the intent is required of a step: every key left out is a decode step saved, read as its default
    shortest = {
        "steps": [{"intent_id": "cabin_window_open"}, {"intent_id": "cabin_set_ac", "slots": {"temperature": 22}}]
    }
    validator.validate(shortest)
    plan = check(shortest)
    assert isinstance(plan, ValidatedPlan) and plan.workflow.type.value == "sequence"
    assert [s.depends_on for s in plan.workflow.steps] == [[], []] and not any(s.condition for s in plan.workflow.steps)
