"""The shared encoder on the real e5-small weights as the cockpit pack tuned them: both runtimes agree, one call is one
pass, a pass can be stopped."""
from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from deployments.encoder import Encoder
from models.artifacts import encoder_for
from models.embedding import PassStopped, RunControl

TEXTS = ["打开车窗", "把空调调到二十二度", "导航去最近的加油站", "我想听点周杰伦的歌"]


@pytest.fixture(scope="module")
def encoders(cockpit):
    _, settings = cockpit
    def make(runtime: str) -> Encoder:
        return Encoder(path=encoder_for(settings.artifacts_dir(), settings.encoder_path), cfg=settings.models.model_copy(update={"encoder_runtime": runtime}),
                       state_dir=settings.state_dir)
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
