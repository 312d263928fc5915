"""The `inline` layout's client: the real encoder and heads in this process, behind the engine's `ModelClient`, with
the model replicas' body around them — one pass for concurrent turns, the deadline drop, faults and cancellation."""

from __future__ import annotations

import asyncio
import time

import pytest
import pytest_asyncio

from deployments.artifacts import served_settings
from engine.model_client import NLU_STAGES, NluRequest, StageError
from serve_app.replicas.inline import InlineModels


def request(text: str, *, within_s: float = 5.0, clauses: tuple[str, ...] = ()) -> NluRequest:
    return NluRequest(text=text, clauses=clauses, deadlines=dict.fromkeys(NLU_STAGES, time.time() + within_s))


pytestmark = pytest.mark.asyncio(loop_scope="module")  # the replica body's batcher lives on one event loop


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def inline(cockpit):
    _, settings = cockpit
    return await InlineModels.start(served_settings(settings))


async def test_every_stage_answers_from_one_pass_and_concurrent_turns_share_it(inline):
    before = inline.body.stats()
    calls = [inline.understand(request(t)) for t in ("打开车窗", "把空调调到二十二度", "导航去最近的充电站")]
    outcomes = [{s: await c.outcome(s) for s in NLU_STAGES} for c in calls]
    after = inline.body.stats()
    assert [o["classifier"].candidates[0].intent for o in outcomes] == [
        "cabin_window_open",
        "cabin_set_ac",
        "cabin_nav_to",
    ]
    assert all(o["encoder"].vector for o in outcomes)
    assert after["turns"] - before["turns"] == 3 and after["passes"] - before["passes"] <= 2, (before, after)


async def test_a_turn_past_its_deadline_degrades_every_stage_before_any_work(inline):
    before = inline.body.stats()
    call = inline.understand(request("打开车窗", within_s=-0.01))
    for stage in NLU_STAGES:
        with pytest.raises(StageError, match="deadline"):
            await call.outcome(stage)
    assert inline.body.stats()["expired"] == before["expired"] + 1


async def test_a_turn_that_stops_waiting_is_taken_out_of_the_replica(inline, monkeypatch):
    slow = asyncio.Event()
    original = inline.body.call

    async def held(item, deadline):
        await slow.wait()
        return await original(item, deadline)

    monkeypatch.setattr(inline.body, "call", held)
    call = inline.understand(request("打开车窗"))
    await asyncio.sleep(0.05)
    call.cancel()
    with pytest.raises(StageError, match="cancelled"):
        await call.outcome("encoder")
    slow.set()


async def test_an_injected_fault_in_the_runs_file_degrades_the_head_it_names(cockpit, tmp_path):
    _, settings = cockpit
    faults = tmp_path / "faults"
    env = settings.env.model_copy(update={"faults_file": faults})
    models = await InlineModels.start(served_settings(settings.model_copy(update={"env": env})))
    faults.write_text("classifier:error=1")
    time.sleep(0.25)  # the file is looked at no more than every 0.2 s
    call = models.understand(request("打开车窗"))
    with pytest.raises(StageError, match="injected"):
        await call.outcome("classifier")
    assert (await call.outcome("retriever")).candidates, "the other heads answer"
