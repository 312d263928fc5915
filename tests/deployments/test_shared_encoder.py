"""The shared encoder on the real e5-small weights as the cockpit pack tuned them: both runtimes agree, one call is one
pass, a pass can be stopped."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from deployments.artifacts import encoder_for
from deployments.embedding import PassStopped, RunControl
from deployments.encoder import Encoder

TEXTS = ["打开车窗", "把空调调到二十二度", "导航去最近的加油站", "我想听点周杰伦的歌"]


@pytest.fixture(scope="module")
def encoders(cockpit):
    _, settings = cockpit

    def make(runtime: str) -> Encoder:
        return Encoder(
            path=encoder_for(settings.artifacts_dir(), settings.encoder_path),
            cfg=settings.models.model_copy(update={"encoder_runtime": runtime}),
            state_dir=settings.state_dir,
        )

    return {"onnx": make("onnx"), "torch": make("torch")}


def test_both_runtimes_give_the_same_normalized_vectors(encoders):
    onnx, torch = (encoders[r].encode([TEXTS])[0] for r in ("onnx", "torch"))
    assert onnx.shape == torch.shape == (len(TEXTS), encoders["onnx"].dim)
    assert np.allclose(np.linalg.norm(onnx, axis=1), 1.0, atol=1e-5)
    assert float(np.min(np.sum(onnx * torch, axis=1))) > 0.9999


def test_one_call_is_one_pass_over_every_turns_texts(encoders):
    encoder = encoders["onnx"]
    before = dict(encoder.counts)
    turns = [[TEXTS[0]], [TEXTS[1], TEXTS[2], TEXTS[3]]]
    vectors = encoder.encode(turns)
    assert [v.shape[0] for v in vectors] == [1, 3]
    assert encoder.counts["passes"] - before["passes"] == 1
    assert encoder.counts["turns"] - before["turns"] == 2 and encoder.counts["texts"] - before["texts"] == 4
    alone = encoder.encode([[TEXTS[2]]])[0][0]
    assert float(alone @ vectors[1][1]) > 0.9999, "a text embeds the same in a batch as alone"


@pytest.mark.parametrize("runtime", ["onnx", "torch"])
def test_a_stopped_pass_raises_instead_of_finishing(encoders, runtime):
    control = RunControl()
    control.stop()
    with pytest.raises(PassStopped):
        encoders[runtime].encode([TEXTS * 8], control)


def test_a_running_torch_pass_stops_at_the_next_layer(encoders):
    long_batch = [["把空调调到二十二度然后打开车窗再导航去公司" * 12] * 32]
    control, errors = RunControl(), []

    def run():
        try:
            encoders["torch"].encode(long_batch, control)
        except PassStopped as exc:
            errors.append(exc)

    t0 = time.perf_counter()
    worker = threading.Thread(target=run)
    worker.start()
    time.sleep(0.05)
    control.stop()
    worker.join(10)
    assert errors, "the pass ran to completion"
    assert time.perf_counter() - t0 < 2.0


def test_a_pass_that_finds_the_replica_quiet_uses_the_idle_threads_and_gives_the_same_vectors(cockpit):
    _, settings = cockpit
    cfg = settings.models.model_copy(
        update={"encoder_runtime": "onnx", "threads": 1, "idle_threads": 2, "idle_after_ms": 50.0}
    )
    encoder = Encoder(
        path=encoder_for(settings.artifacts_dir(), settings.encoder_path), cfg=cfg, state_dir=settings.state_dir
    )
    time.sleep(0.06)
    quiet = encoder.encode([TEXTS[:2]])[0]
    assert encoder.counts["quiet_passes"] == 1, "one turn after a quiet spell runs on the idle threads"
    busy = encoder.encode([TEXTS[:2]])[0]  # right after a pass: the replica is not quiet
    assert encoder.counts["quiet_passes"] == 1
    time.sleep(0.06)
    encoder.encode([TEXTS[:1], TEXTS[1:2]])  # a batch of two turns is load, not quiet
    assert encoder.counts["quiet_passes"] == 1 and encoder.counts["passes"] == 3
    assert float(np.min(np.sum(quiet * busy, axis=1))) > 0.9999


def test_torch_has_no_quiet_session_and_runs_every_pass_on_its_threads(encoders):
    assert encoders["torch"]._model.has_quiet_session is False
    before = encoders["torch"].counts["quiet_passes"]
    time.sleep(0.1)
    encoders["torch"].encode([TEXTS[:1]])
    assert encoders["torch"].counts["quiet_passes"] == before


def test_the_quiet_sessions_workers_run_at_the_configured_niceness_and_no_other_thread_does(cockpit):
    import os

    _, settings = cockpit
    cfg = settings.models.model_copy(
        update={"encoder_runtime": "onnx", "threads": 1, "idle_threads": 2, "idle_nice": 17}
    )
    encoder = Encoder(
        path=encoder_for(settings.artifacts_dir(), settings.encoder_path), cfg=cfg, state_dir=settings.state_dir
    )
    workers = encoder._model.quiet_workers
    assert len(workers) == 1, "two intra-op threads: the caller's and one worker of the session's own"
    assert os.getpriority(os.PRIO_PROCESS, workers[0]) == 17
    assert os.getpriority(os.PRIO_PROCESS, 0) == 0 and os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == 0
    time.sleep(0.1)
    encoder.encode([TEXTS[:1]])
    assert encoder.counts["quiet_passes"] == 1


def test_the_quiet_sessions_workers_run_a_pass_under_the_normal_policy_and_wait_under_sched_idle(cockpit):
    """Their spin after a pass then gives way at once to any thread that wakes (`models.idle_park`)."""
    import os

    _, settings = cockpit
    cfg = settings.models.model_copy(
        update={"encoder_runtime": "onnx", "threads": 1, "idle_threads": 2, "idle_park": True}
    )
    encoder = Encoder(
        path=encoder_for(settings.artifacts_dir(), settings.encoder_path), cfg=cfg, state_dir=settings.state_dir
    )
    model = encoder._model
    (worker,) = model.quiet_workers
    assert os.sched_getscheduler(worker) == os.SCHED_IDLE  # parked from the start
    during = []
    session = model._quiet_session

    class Watched:  # the quiet session, noting the worker's policy when a pass starts
        def run(self, *args):
            during.append(os.sched_getscheduler(worker))
            return session.run(*args)

    model._quiet_session = Watched()
    time.sleep(0.1)
    encoder.encode([TEXTS[:1]])
    assert encoder.counts["quiet_passes"] == 1 and during == [os.SCHED_OTHER]
    assert os.sched_getscheduler(worker) == os.SCHED_IDLE and os.getpriority(os.PRIO_PROCESS, worker) == cfg.idle_nice
    encoder.encode([TEXTS[:1], TEXTS[1:2]])  # a busy pass runs on the other session and leaves the worker parked
    assert len(during) == 1 and os.sched_getscheduler(worker) == os.SCHED_IDLE
    off = Encoder(
        path=encoder_for(settings.artifacts_dir(), settings.encoder_path),
        cfg=cfg.model_copy(update={"idle_park": False}),
        state_dir=settings.state_dir,
    )
    assert os.sched_getscheduler(off._model.quiet_workers[0]) == os.SCHED_OTHER
