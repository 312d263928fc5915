"""Admission that knows the budget (no Ray): the predicted time of a new turn decides, not a fixed count."""

from __future__ import annotations

import asyncio
from contextlib import AsyncExitStack

import pytest

from config.serving import AdmissionConfig
from engine.errors import Overloaded
from serve_app.turns.admission import Admission

CFG = AdmissionConfig(
    max_in_flight_turns=100, headroom=0.8, drift=0.002, smoothing=0.05, stale_s=5, min_samples=3, outlier=3
)


async def hold(admission: Admission, seconds: float, budget_ms: float = 600) -> None:
    async with admission.turn(budget_ms):
        await asyncio.sleep(seconds)


async def saturate(admission: Admission, rate: float, seconds: float) -> None:
    """A replica that finishes `rate` turns/s: 4 always in flight, each released in turn."""

    async def worker(offset: float) -> None:
        await asyncio.sleep(offset)
        while asyncio.get_running_loop().time() < stop:
            await hold(admission, 4 / rate)

    stop = asyncio.get_running_loop().time() + seconds
    await asyncio.gather(*(worker(i / rate) for i in range(4)))


async def test_an_empty_replica_always_admits():
    admission = Admission(CFG)
    await hold(admission, 0.7)  # one slow turn: 700 ms, over the 480 ms the headroom allows
    async with admission.turn(600):
        pass


async def test_without_a_capacity_estimate_only_the_cap_applies():
    admission = Admission(CFG)
    await hold(admission, 0.4)
    holders = [asyncio.create_task(hold(admission, 0.05)) for _ in range(6)]  # racing turns, e.g. on one session
    await asyncio.sleep(0.01)
    assert admission.in_flight == 6 and admission.capacity() is None
    await asyncio.gather(*holders)


async def test_a_turn_that_would_wait_past_its_budget_is_shed_with_a_reason():
    admission = Admission(CFG)
    await hold(admission, 0.02)  # alone: 20 ms
    await saturate(admission, rate=40.0, seconds=1.6)
    assert admission.capacity() == pytest.approx(40.0, rel=0.3)
    holders = [asyncio.create_task(hold(admission, 1.0)) for _ in range(30)]
    await asyncio.sleep(0.01)
    # 20 ms + n / 40 per s stays under 480 ms up to n = 18
    assert 15 <= admission.in_flight <= 22, admission.in_flight
    with pytest.raises(Overloaded, match="within 600 ms"):
        async with admission.turn(600):
            pass
    async with admission.turn(10_000):  # a longer budget fits the same queue
        pass
    await asyncio.gather(*holders, return_exceptions=True)


async def test_the_hard_cap_holds_whatever_the_estimate():
    admission = Admission(
        AdmissionConfig(
            max_in_flight_turns=2, headroom=1.0, drift=0.002, smoothing=0.05, stale_s=5, min_samples=3, outlier=3
        )
    )
    holders = [asyncio.create_task(hold(admission, 0.05)) for _ in range(2)]
    await asyncio.sleep(0.01)
    with pytest.raises(Overloaded, match="limit 2"):
        async with admission.turn(600):
            pass
    await asyncio.gather(*holders)
    assert admission.in_flight == 0


async def test_modalities_are_estimated_apart():
    """A slow image turn does not make text turns look slow."""
    admission = Admission(CFG)
    async with admission.turn(4600, "image_ocr"):
        await asyncio.sleep(0.3)
    assert admission.predict_ms("text") == 0.0 and admission.predict_ms("image_ocr") > 250


async def test_slow_turns_under_overload_do_not_inflate_the_unloaded_time():
    """Once the replica has answered fast, a stretch of slow turns does not shut the door on the next ones."""
    admission = Admission(CFG)
    for _ in range(CFG.min_samples):
        await hold(admission, 0.02)
    for _ in range(5):
        await hold(admission, 0.5)  # overloaded: every turn took half a second
    assert admission.predict_ms() < 0.8 * 600
    holders = [asyncio.create_task(hold(admission, 0.05)) for _ in range(3)]
    await asyncio.sleep(0.01)
    assert admission.in_flight == 3
    await asyncio.gather(*holders)


async def _through_one_server(admission: Admission | None, server: asyncio.Lock, stop: float, service_s: float) -> None:
    """A closed-loop client of a model replica that serves one turn at a time (FIFO), via admission or not."""
    loop = asyncio.get_running_loop()
    while loop.time() < stop:
        if admission is None:
            async with server:
                await asyncio.sleep(service_s)
            continue
        async with admission.turn(100_000):
            async with server:
                await asyncio.sleep(service_s)


async def test_what_a_turn_ahead_adds_follows_load_the_replica_cannot_see():
    """Another orchestrator replica starting to send as many turns to the same model replica doubles what each
    turn ahead costs: the estimate follows, where a throughput peak seen while the other was quiet would not."""
    server, loop = asyncio.Lock(), asyncio.get_running_loop()
    admission = Admission(CFG)
    stop = loop.time() + 0.6
    await asyncio.gather(*(_through_one_server(admission, server, stop, 0.01) for _ in range(6)))
    assert admission.capacity() == pytest.approx(100.0, rel=0.35)
    stop = loop.time() + 1.5
    await asyncio.gather(
        *(_through_one_server(admission, server, stop, 0.01) for _ in range(6)),
        *(_through_one_server(None, server, stop, 0.01) for _ in range(6)),
    )
    assert admission.capacity() == pytest.approx(50.0, rel=0.35)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _in_flight(admission: Admission, stack: AsyncExitStack, n: int) -> None:
    for _ in range(n):
        await stack.enter_async_context(admission.turn(600))


async def test_a_batching_replica_is_predicted_per_depth_not_by_a_straight_line():
    """A batched model takes a dozen turns ahead nearly as fast as one; the turn that waited for a whole batch makes
    a straight line through the unloaded time overrate every deeper queue."""
    clock = Clock()
    admission = Admission(CFG, clock=clock)
    admission.record("text", 0, 50)
    for depth in range(2, 13):
        for _ in range(CFG.min_samples):
            admission.record("text", depth, 60 + 2 * depth)  # joined a batch
    for _ in range(60):
        admission.record("text", 1, 110)  # arrived just after a batch started: waited for all of it
    linear = 50 + 12 * 1000 / admission.capacity()  # 50 ms + 12 x what one turn ahead added on average
    async with AsyncExitStack() as stack:
        await _in_flight(admission, stack, 12)
        assert linear > 0.8 * 600
        assert admission.predict_ms() == pytest.approx(110)  # the slowest recent depth up to 12
        assert admission.refusal(600) is None
        for _ in range(40):
            admission.record("text", 12, 700)  # that depth turned slow: shed there
        assert admission.refusal(600) is not None
        clock.now += (
            6  # nothing measured at depth 12 since: it is predicted from the depths below, and one turn probes it
        )
        for depth in range(12):
            for _ in range(CFG.min_samples):
                admission.record("text", depth, 60 + 2 * depth)
        assert admission.predict_ms() < 0.8 * 600
        assert admission.refusal(600) is None


async def test_a_depth_not_measured_recently_is_extrapolated_from_the_deepest_one_that_was():
    clock = Clock()
    admission = Admission(CFG, clock=clock)
    admission.record("text", 0, 40)
    for _ in range(20):
        admission.record("text", 2, 100)  # each turn ahead adds 30 ms
    async with AsyncExitStack() as stack:
        await _in_flight(admission, stack, 10)
        assert admission.predict_ms() == pytest.approx(100 + 8 * 30, rel=0.05)


async def test_what_a_turn_ahead_cost_in_a_burst_long_past_does_not_shed_a_new_queue():
    clock = Clock()
    admission = Admission(CFG, clock=clock)
    admission.record("text", 0, 40)
    for _ in range(20):
        admission.record("text", 3, 640)  # a burst: each turn ahead added 200 ms
    clock.now += 60  # quiet since, but for one turn alone
    admission.record("text", 0, 40)
    async with AsyncExitStack() as stack:
        await _in_flight(admission, stack, 6)
        assert admission.predict_ms() == pytest.approx(40)
        assert admission.refusal(600) is None


async def test_one_slow_turn_does_not_shut_a_depth_until_more_confirm_it():
    """A pause of the machine makes one turn slow; the depth it was admitted at is trusted only once min_samples
    turns measured it, so one outlier does not shed every deeper queue for stale_s."""
    clock = Clock()
    admission = Admission(CFG, clock=clock)
    for depth in range(3):
        for _ in range(CFG.min_samples):
            admission.record("text", depth, 60 + 10 * depth)
    admission.record("text", 3, 900)  # one outlier, first at its depth
    async with AsyncExitStack() as stack:
        await _in_flight(admission, stack, 4)
        assert admission.refusal(600) is None
        for _ in range(CFG.min_samples - 1):
            admission.record("text", 3, 900)  # confirmed: depth 3 is slow now
        assert admission.refusal(600) is not None


async def test_a_stall_of_a_few_turns_does_not_shut_a_depth_it_was_measured_fast_at():
    """A database stall makes every turn in flight take seconds. A shed depth measures nothing, so an average such a
    stall lifted past the threshold would shed every turn at that depth until it went stale."""
    clock = Clock()
    admission = Admission(CFG, clock=clock)
    for depth in range(4):
        for _ in range(10):
            admission.record("text", depth, 60 + 10 * depth)
    for depth in range(4):
        for _ in range(3):
            admission.record("text", depth, 2500)  # the stall
    async with AsyncExitStack() as stack:
        await _in_flight(admission, stack, 3)
        assert admission.refusal(300) is None  # a text turn may queue for its encoder's 300 ms
        assert admission.predict_ms() < 0.5 * 300


async def test_a_lasting_slowdown_still_sheds_within_a_few_turns():
    clock = Clock()
    admission = Admission(CFG, clock=clock)
    for depth in range(4):
        for _ in range(10):
            admission.record("text", depth, 60 + 10 * depth)
    async with AsyncExitStack() as stack:
        await _in_flight(admission, stack, 3)
        slow = 0
        while admission.refusal(600) is None:
            admission.record("text", 3, 1000)  # depth 3 now takes a second, turn after turn
            slow += 1
        assert slow <= 25


async def test_a_depth_measured_afresh_starts_from_the_median_of_its_first_turns():
    """After a quiet spell a depth is measured again; one stalled turn among its first ones does not set its average."""
    clock = Clock()
    admission = Admission(CFG, clock=clock)
    for depth in range(3):
        for _ in range(CFG.min_samples):
            admission.record("text", depth, 60 + 10 * depth)
    for sample in (2500, 95, 90):
        admission.record("text", 3, sample)
    assert admission._loads["text"].by_depth[3].average == pytest.approx(95)
    async with AsyncExitStack() as stack:
        await _in_flight(admission, stack, 4)
        assert admission.refusal(600) is None


async def test_a_turn_that_escalated_to_the_llm_planner_teaches_nothing_about_the_queue():
    """Seconds waiting on the LLM say nothing of how long the model stages take: learning them would shed text
    turns that would have met their budget."""
    from engine.deadline import Deadline

    clock = Clock()
    admission = Admission(CFG, clock=clock)
    for _ in range(CFG.min_samples):
        admission.record("text", 1, 80)
    escalated = Deadline(600)
    escalated.escalate(2400)
    async with admission.turn(600, deadline=escalated):
        clock.now += 2.5
    async with admission.turn(600, deadline=Deadline(600)):  # not escalated: learnt
        clock.now += 0.09
    assert admission.predict_ms("text") < 600 * CFG.headroom
    assert admission._loads["text"].by_depth[0].turns == 1, "only the plain turn was measured at depth 0"
