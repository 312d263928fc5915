"""The pooled encoder a local HF / sentence-transformers folder describes: its pooling, query prefix and length,
the torch module (transformer → pooling → L2 norm) and that module exported once to ONNX."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, cast

if TYPE_CHECKING:
    import torch

QUERY_PREFIX = "query: "  # e5 encoders read a query with this prefix, a passage with "passage: "
PASSAGE_PREFIX = "passage: "
ONNX_FILE = "model.onnx"
ONNX_STAMP = "export.json"
EXPORT_VERSION = "1"


def pooling_mode(path: Path) -> str:
    """'mean' or 'cls' from a sentence-transformers folder (a plain HF folder gets mean pooling)."""
    config = path / "1_Pooling" / "config.json"
    if not config.exists():
        return "mean"
    data = json.loads(config.read_text(encoding="utf-8"))
    if data.get("pooling_mode_cls_token"):
        return "cls"
    if data.get("pooling_mode_mean_tokens", True):
        return "mean"
    raise ValueError(f"{config}: only mean or CLS pooling is supported.")


def query_prefix(path: Path) -> str:
    """The role prefix a query gets: the folder's sentence-transformers `query` prompt (a tuned copy of e5 keeps its
    base's), else "query: " for an e5 checkpoint by name, else none."""
    config = path / "config_sentence_transformers.json"
    if config.exists():
        prompt = json.loads(config.read_text(encoding="utf-8")).get("prompts", {}).get("query")
        if prompt is not None:
            return cast(str, prompt)
    return QUERY_PREFIX if "e5" in str(path).lower() else ""


def max_length(path: Path) -> int:
    config = path / "sentence_bert_config.json"
    if config.exists():
        return int(json.loads(config.read_text(encoding="utf-8")).get("max_seq_length", 512))
    return 512


def pooled_module(path: Path) -> torch.nn.Module:
    import torch
    from transformers import AutoModel

    mode = pooling_mode(path)

    class Pooled(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.transformer = AutoModel.from_pretrained(str(path), local_files_only=True).eval()

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            hidden = self.transformer(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
            if mode == "cls":
                vectors = hidden[:, 0]
            else:
                mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
                vectors = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            return torch.nn.functional.normalize(vectors, dim=-1)

    return Pooled()


def onnx_dir(encoder: Path, state_dir: Path) -> Path:
    """Where the ONNX export of `encoder` lives: beside its weights when that folder is writable (every user of
    the encoder shares one export), else under the state dir, keyed by the encoder's path."""
    if os.access(encoder, os.W_OK):
        return encoder / "onnx"
    digest = hashlib.sha256(str(encoder.resolve()).encode()).hexdigest()[:12]
    return state_dir / "onnx" / f"{encoder.name}-{digest}"


def _weights_stamp(encoder: Path) -> dict[str, str]:
    files = sorted(p for p in encoder.iterdir() if p.suffix in (".safetensors", ".bin") and p.is_file())
    return {
        "version": EXPORT_VERSION,
        "pooling": pooling_mode(encoder),
        **{p.name: f"{p.stat().st_size}:{int(p.stat().st_mtime)}" for p in files},
    }


def export_onnx(encoder: Path, out: Path) -> Path:
    """Export the pooled encoder to `out/model.onnx` once (about 10 s here); later calls return at once."""
    import torch

    stamp = _weights_stamp(encoder)
    target = out / ONNX_FILE
    if target.exists() and (out / ONNX_STAMP).exists() and json.loads((out / ONNX_STAMP).read_text()) == stamp:
        return target
    from transformers import AutoTokenizer

    out.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(str(encoder), local_files_only=True)
    sample = tokenizer(["query: 打开车窗", "query: 把空调调到二十二度"], padding=True, return_tensors="pt")
    tmp = out / f".{ONNX_FILE}.{os.getpid()}"
    with torch.inference_mode():
        torch.onnx.export(
            pooled_module(encoder),
            (sample["input_ids"], sample["attention_mask"]),
            str(tmp),
            input_names=["input_ids", "attention_mask"],
            output_names=["embedding"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "tokens"},
                "attention_mask": {0: "batch", 1: "tokens"},
                "embedding": {0: "batch"},
            },
            opset_version=17,
            dynamo=False,
        )
    os.replace(tmp, target)
    (out / ONNX_STAMP).write_text(json.dumps(stamp), encoding="utf-8")
    return target
