"""Contract tests for deployments.faults: the fault spec grammar and what apply() does at run time."""

from __future__ import annotations

import asyncio
import time

import pytest

from deployments.faults import Fault, FaultSet, InjectedFault


def test_parse_one_stage_delay():
    assert FaultSet.parse("classifier:delay_ms=800").faults == {"classifier": Fault(delay_ms=800.0)}


def test_parse_bare_options_with_a_default_stage():
    assert FaultSet.parse("delay_ms=50", stage="detector").faults == {"detector": Fault(delay_ms=50.0)}
    # an explicit stage prefix still wins over the default
    assert FaultSet.parse("retriever:error=1", stage="detector").faults == {"retriever": Fault(error=True)}


def test_parse_several_stages():
    assert FaultSet.parse("a:error=1;b:delay_ms=1").faults == {"a": Fault(error=True), "b": Fault(delay_ms=1.0)}
    assert FaultSet.parse(" a:error=1 ; b:delay_ms=1 ").faults == {"a": Fault(error=True), "b": Fault(delay_ms=1.0)}
    assert FaultSet.parse("classifier:delay_ms=20,error=1").faults == {"classifier": Fault(delay_ms=20.0, error=True)}


@pytest.mark.parametrize("value, expected", [("1", True), ("true", True), ("0", False), ("false", False)])
def test_parse_error_flag(value, expected):
    assert FaultSet.parse(f"x:error={value}").faults["x"].error is expected


@pytest.mark.parametrize("spec", [None, "", " ", ";", " ; "])
def test_empty_spec_means_no_faults(spec):
    fs = FaultSet.parse(spec)
    assert fs.faults == {} and fs.cancelled == 0


@pytest.mark.parametrize(
    "spec",
    [
        "classifier:bogus=1",  # unknown key
        "classifier:delay_ms=1,color=red",
        ":delay_ms=5",  # no stage name
        "classifier:delay_ms=abc",  # not a number
        "delay_ms=50",  # bare options and no default stage to apply them to
    ],
)
def test_bad_specs_raise_value_error(spec):
    with pytest.raises(ValueError):
        FaultSet.parse(spec)


async def test_apply_sleeps_for_the_delay():
    fs = FaultSet.parse("classifier:delay_ms=80")
    start = time.perf_counter()
    await fs.apply("classifier")
    assert time.perf_counter() - start >= 0.075


async def test_apply_to_an_unconfigured_stage_is_a_no_op():
    fs = FaultSet.parse("classifier:delay_ms=5000,error=1")
    start = time.perf_counter()
    await fs.apply("retriever")
    assert time.perf_counter() - start < 0.5


async def test_apply_raises_injected_fault_after_the_delay():
    fs = FaultSet.parse("retriever:delay_ms=40,error=1")
    start = time.perf_counter()
    with pytest.raises(InjectedFault, match="retriever"):
        await fs.apply("retriever")
    assert time.perf_counter() - start >= 0.035
    with pytest.raises(InjectedFault):
        await FaultSet.parse("error=1", stage="detector").apply("detector")


async def test_cancelling_a_delayed_stage_is_counted():
    fs = FaultSet.parse("detector:delay_ms=10000")
    task = asyncio.create_task(fs.apply("detector"))
    await asyncio.sleep(0.02)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert fs.cancelled == 1

    second = asyncio.create_task(fs.apply("detector"))
    await asyncio.sleep(0.01)
    with pytest.raises(asyncio.TimeoutError):
        await asyncio.wait_for(second, timeout=0.02)  # a stage deadline cancels the sleeping fault
    assert fs.cancelled == 2


async def test_a_fault_that_finishes_is_not_counted_as_cancelled():
    fs = FaultSet.parse("classifier:delay_ms=5")
    await asyncio.wait_for(fs.apply("classifier"), timeout=5)
    assert fs.cancelled == 0


async def test_stage_faults_follow_the_faults_file_for_a_stage_the_orchestrator_runs(tmp_path):
    import time as _time

    from deployments.faults import InjectedFault, StageFaults

    path = tmp_path / "faults"
    faults = StageFaults("", path)
    await faults("planner")  # no file: nothing
    path.write_text("planner:delay_ms=50")
    await asyncio.sleep(0.25)  # the file is checked at most every 0.2 s
    t0 = _time.perf_counter()
    await faults("planner")
    assert _time.perf_counter() - t0 >= 0.05
    await faults("encoder")  # other stages are not touched
    path.write_text("planner:error=1")
    await asyncio.sleep(0.25)
    with pytest.raises(InjectedFault):
        await faults("planner")
