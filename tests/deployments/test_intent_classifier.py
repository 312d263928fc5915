"""Contract tests for deployments.intent_classifier with the real built cockpit models (no fakes)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from config.models import HeadConfig
from deployments.artifacts import read_manifest
from deployments.intent_classifier import BACKENDS, IntentClassifier
from tests.deployments.deploy_checks import CLEAR, FedHead, assert_ranked, assert_same_results

MIXED = ["打开车窗", "我想听点周杰伦的歌", "今天晚上吃什么好", "你好", "把空调调到22度", "后视镜收一下"]


def make(settings, *, top_k: int, checkpoint: str | None = None) -> FedHead:
    """The pack's classifier, or (`checkpoint`) a sequence-classification checkpoint reading the text itself."""
    cfg = settings.models
    if checkpoint is not None:
        heads = {**cfg.heads, "classifier": HeadConfig(input="text", checkpoint=checkpoint)}
        cfg = cfg.model_copy(update={"heads": heads})
    return FedHead(IntentClassifier(artifacts=settings.artifacts_dir("cockpit"), cfg=cfg, top_k=top_k), settings)


@pytest.fixture(scope="module")
def classifier(cockpit):
    _, settings = cockpit
    return make(settings, top_k=settings.top_k)


@pytest.fixture(scope="module")
def full_classifier(cockpit):
    """top_k = every label: the whole distribution comes back."""
    _, settings = cockpit
    labels = read_manifest(settings.artifacts_dir("cockpit"))["labels"]
    return make(settings, top_k=len(labels))


def test_labels_are_the_built_label_set(classifier, cockpit):
    pack, settings = cockpit
    assert classifier.labels == read_manifest(settings.artifacts_dir("cockpit"))["labels"]
    assert classifier.labels == sorted(i.id for i in pack.intents if i.examples)


def test_top_k_sorted_probabilities(classifier, cockpit):
    _, settings = cockpit
    for cands in classifier.classify_batch(MIXED):
        assert len(cands) == settings.top_k
        assert_ranked(cands, top_k=settings.top_k)
        assert sum(c.score for c in cands) <= 1.0 + 1e-6


def test_full_distribution_sums_to_one(full_classifier):
    for text, cands in zip(MIXED, full_classifier.classify_batch(MIXED), strict=True):
        assert len(cands) == len(full_classifier.labels)
        assert {c.intent for c in cands} == set(full_classifier.labels)
        assert_ranked(cands, top_k=len(full_classifier.labels))
        assert sum(c.score for c in cands) == pytest.approx(1.0, abs=1e-5), text


def test_top_k_is_a_prefix_of_the_full_ranking(classifier, full_classifier):
    short, full = classifier.classify_batch(MIXED), full_classifier.classify_batch(MIXED)
    for s, f in zip(short, full, strict=True):
        assert [c.intent for c in s] == [c.intent for c in f[: len(s)]]
        assert [c.score for c in s] == pytest.approx([c.score for c in f[: len(s)]], abs=1e-6)


def test_clear_commands_rank_their_intent_first(classifier):
    got = {t: c[0].intent for t, c in zip(CLEAR, classifier.classify_batch(list(CLEAR)), strict=True)}
    assert got == CLEAR


def test_batch_matches_one_by_one(classifier):
    batch = classifier.classify_batch(MIXED)
    assert len(batch) == len(MIXED)
    assert_same_results(batch, [classifier.classify_batch([t])[0] for t in MIXED])


def test_an_unknown_head_input_is_rejected_at_load(cockpit):
    _, settings = cockpit
    with pytest.raises(ValueError, match="input"):
        HeadConfig(input="no_such_input")
    with pytest.raises(ValueError, match="unknown head"):
        settings.models.model_validate({**settings.models.model_dump(), "heads": {"planner": {"input": "text"}}})


def test_a_text_input_classifier_needs_its_checkpoint(cockpit):
    _, settings = cockpit
    with pytest.raises(ValueError, match="checkpoint"):
        make(settings, top_k=3, checkpoint="")


def test_registry_names_match_the_config_docs():
    assert set(BACKENDS) == {"shared_embedding", "text"}


def test_without_the_embedding_the_ngram_model_still_ranks(classifier):
    """What the classifier can say when the encoder failed: its text-reading part alone."""
    ranked = classifier.head.classify_text_only(list(CLEAR))
    assert sum(c[0].intent == gold for c, gold in zip(ranked, CLEAR.values(), strict=True)) >= len(CLEAR) - 1
    for cands in ranked:
        assert sum(c.score for c in cands) <= 1.0 + 1e-6


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> tuple[Path, dict[int, str]]:
    """A randomly initialised BertForSequenceClassification with its own tiny character vocab."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    path = tmp_path_factory.mktemp("tiny-bert")
    vocab = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        *dict.fromkeys("打开关闭车窗空调到度音乐播放导航去公司我想听"),
    ]
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    BertTokenizer(str(path / "vocab.txt")).save_pretrained(str(path))
    id2label = {0: "alpha_open", 1: "beta_close", 2: "gamma_music", 3: "delta_nav"}
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=len(id2label),
        id2label=id2label,
        label2id={v: k for k, v in id2label.items()},
    )
    torch.manual_seed(0)
    BertForSequenceClassification(config).eval().save_pretrained(str(path))
    return path, id2label


def test_hf_sequence_classification_backend(cockpit, tiny_bert):
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    _, settings = cockpit
    path, id2label = tiny_bert
    texts = ["打开车窗", "关闭空调", "我想听音乐", "导航去公司", "空调调到二十度"]
    clf = make(settings, top_k=len(id2label), checkpoint=str(path))
    assert clf.labels == [id2label[i] for i in range(len(id2label))]
    results = clf.classify_batch(texts)
    assert len(results) == len(texts)
    for cands in results:
        assert_ranked(cands, top_k=len(id2label))
        assert {c.intent for c in cands} == set(id2label.values())
        assert sum(c.score for c in cands) == pytest.approx(1.0, abs=1e-5)

    # the scores are that checkpoint's own softmax, mapped through its id2label
    tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(str(path), local_files_only=True).eval()
    with torch.inference_mode():
        probs = torch.softmax(model(**tok(texts, padding=True, return_tensors="pt")).logits, dim=-1).numpy()
    for row, cands in zip(probs, results, strict=True):
        expected = {id2label[j]: float(row[j]) for j in range(len(id2label))}
        assert {c.intent: c.score for c in cands} == pytest.approx(expected, abs=1e-5)

    top1 = make(settings, top_k=1, checkpoint=str(path))
    for row, cands in zip(probs, top1.classify_batch(texts), strict=True):
        assert [c.intent for c in cands] == [id2label[int(np.argmax(row))]]


def test_hf_backend_reads_labels_from_the_checkpoint_config(tiny_bert):
    path, id2label = tiny_bert
    saved = json.loads((path / "config.json").read_text(encoding="utf-8"))["id2label"]
    assert {int(k): v for k, v in saved.items()} == id2label


def test_the_fast_ngram_scoring_equals_the_pipelines(cockpit):
    import joblib

    from deployments.artifacts import CLASSIFIER_NGRAM
    from deployments.intent_classifier import NgramModel

    _, settings = cockpit
    pipeline = joblib.load(settings.artifacts_dir("cockpit") / CLASSIFIER_NGRAM)
    texts = [*MIXED, "zzz", "", "打开车窗然后播放音乐，再把空调调到二十二度"]
    assert np.allclose(NgramModel(pipeline).predict_proba(texts), pipeline.predict_proba(texts), atol=1e-9)
