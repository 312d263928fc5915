"""The one replica body (no Ray): deadline drop, faults from env, user_config and the run's file, counters, warm-up."""

from __future__ import annotations

import time

import pytest

from deployments.faults import InjectedFault
from serve_app.replicas.batching import DeadlineExpired
from serve_app.replicas.model import ReplicaBody
from serve_app.replicas.work import Work

WARMED: list[bool] = []


def work(*, partial: bool = False, seen: list | None = None) -> Work:
    seen = seen if seen is not None else []
    WARMED.clear()

    def run(items, control, fail):
        seen.append((list(items), fail))
        return [f"{i}!" for i in items]

    return Work(
        stages=("encoder", "classifier"),
        run=run,
        max_batch_size=4,
        warmup=lambda: WARMED.append(True),
        warmup_items=["w"],
        partial_failures=partial,
        counters=lambda: {"passes": len(seen)},
    )


async def test_warm_up_runs_the_model_and_the_whole_path_before_it_is_ready():
    seen: list = []
    body = ReplicaBody(work(seen=seen), max_wait_s=0.01, max_concurrent=1)
    assert not body.ready
    await body.warm_up()
    assert body.ready and WARMED == [True] and seen[0][0] == ["w"]
    assert body.stats()["batch_batches"] == 0, "warm-up batches are not counted as served work"


async def test_a_request_past_its_deadline_is_refused_before_any_work():
    seen: list = []
    body = ReplicaBody(work(seen=seen), max_wait_s=0.01, max_concurrent=1)
    with pytest.raises(DeadlineExpired):
        await body.call("x", time.time() - 0.001)
    assert seen == [] and body.stats()["expired"] == 1 and body.stats()["calls"] == 1


async def test_an_injected_error_fails_the_call_or_reaches_the_work_per_stage(tmp_path):
    body = ReplicaBody(work(), max_wait_s=0.01, max_concurrent=1, env_faults="classifier:error=1")
    with pytest.raises(InjectedFault):
        await body.call("x", time.time() + 5)
    seen: list = []
    fused = ReplicaBody(
        work(partial=True, seen=seen), max_wait_s=0.01, max_concurrent=1, env_faults="classifier:error=1"
    )
    assert await fused.call("x", time.time() + 5) == "x!"
    assert seen[-1][1] == frozenset({"classifier"}), "a fused replica fails the one head, not the call"


async def test_faults_from_the_runs_file_flip_without_a_restart(tmp_path):
    path = tmp_path / "faults"
    body = ReplicaBody(work(), max_wait_s=0.01, max_concurrent=1, faults_file=path)
    assert await body.call("x", time.time() + 5) == "x!"
    path.write_text("encoder:delay_ms=150")
    time.sleep(0.25)  # the file is looked at no more than every 0.2 s
    t0 = time.perf_counter()
    await body.call("y", time.time() + 5)
    assert time.perf_counter() - t0 >= 0.14
    path.write_text("")
    time.sleep(0.25)
    t0 = time.perf_counter()
    await body.call("z", time.time() + 5)
    assert time.perf_counter() - t0 < 0.1


async def test_user_config_sets_faults_of_the_replicas_own_stage():
    body = ReplicaBody(work(), max_wait_s=0.01, max_concurrent=1)
    body.reconfigure({"faults": "error=1"})  # no stage prefix: this replica's stage (encoder)
    with pytest.raises(InjectedFault):
        await body.call("x", time.time() + 5)
    body.reconfigure({"faults": ""})
    assert await body.call("x", time.time() + 5) == "x!"
