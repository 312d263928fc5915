"""Contract tests for deployments.multi_intent_detector with the real built cockpit detector head (no fakes)."""

from __future__ import annotations

import pytest

from deployments.artifacts import read_manifest
from deployments.multi_intent_detector import MultiIntentDetector
from engine.clauses import ClauseSplitter
from engine.pack import SPECIAL_INTENTS
from tests.deployments.deploy_checks import FedHead, assert_ranked, assert_same_results

# Two requests in one breath, each clause naming a different cockpit intent; own phrasings, not the pack's.
PAIRS = [
    ("帮我把副驾车窗摇下来，顺便放点轻音乐", {"cabin_window_open", "cabin_play_music"}),
    ("车门锁好然后带我回趟家", {"cabin_door_lock", "cabin_nav_to"}),
    ("座椅给我加热一下，再把声音开大点", {"cabin_seat_heat_on", "cabin_volume_up"}),
    ("雨越下越大，雨刮器给我开开，另外空调也停了吧", {"cabin_wiper_on", "cabin_ac_off"}),
    ("天窗关一下，接着切到下一首歌", {"cabin_sunroof_close", "cabin_music_next"}),
    ("查查我那个订单的快递到哪了，还有帮我转个人工", {"cs_query_logistics", "cs_transfer_human"}),
]
# "Most" of the six. Measured 4/6: 副驾车窗摇下来 (window_open 0.43) and 带我回趟家 (nav_to 0.12) are
# single-clause misses of the e5-small head, reported as a known limit rather than patched into the data.
MIN_PAIRS_DETECTED = 4


@pytest.fixture(scope="module")
def detector_labels(cockpit) -> list[str]:
    _, settings = cockpit
    return read_manifest(settings.artifacts_dir("cockpit"))["detector_labels"]


@pytest.fixture(scope="module")
def detector(cockpit, detector_labels):
    """top_k = every detector label, so each label's score is visible."""
    _, settings = cockpit
    return FedHead(
        MultiIntentDetector(artifacts=settings.artifacts_dir("cockpit"), top_k=len(detector_labels)), settings
    )


@pytest.fixture(scope="module")
def pair_results(detector):
    return detector.detect_batch([t for t, _ in PAIRS])


def test_label_set_is_the_task_intents(detector, cockpit, detector_labels):
    pack, _ = cockpit
    (cands,) = detector.detect_batch(["打开车窗"])
    assert sorted(c.intent for c in cands) == sorted(detector_labels)
    assert sorted(detector_labels) == sorted(i.id for i in pack.intents if i.examples and i.id not in SPECIAL_INTENTS)
    assert not set(detector_labels) & set(SPECIAL_INTENTS)
    assert not any(lab.startswith("__") for lab in detector_labels)


def test_scores_are_ranked_and_bounded(detector, detector_labels, pair_results):
    for cands in pair_results + detector.detect_batch(["你好", "打开车窗"]):
        assert len(cands) == len(detector_labels)
        assert_ranked(cands, top_k=len(detector_labels))


def test_scores_are_independent_sigmoids(pair_results, cockpit):
    """Not a softmax: two labels can both be confident, so the scores of one text can sum past 1."""
    _, settings = cockpit
    sums = [sum(c.score for c in cands) for cands in pair_results]
    assert max(sums) > 1.0, sums
    best_two = [cands[0].score + cands[1].score for cands in pair_results]
    assert sum(s > 1.0 for s in best_two) >= MIN_PAIRS_DETECTED, best_two


def test_two_clause_utterances_carry_both_labels(pair_results, cockpit):
    _, settings = cockpit
    threshold = settings.detector.threshold
    report, hits = [], 0
    for (text, gold), cands in zip(PAIRS, pair_results, strict=True):
        top3 = {c.intent: c.score for c in cands[:3]}
        ok = all(g in top3 and top3[g] >= threshold for g in gold)
        hits += ok
        report.append((ok, text, sorted(gold), [(c.intent, round(c.score, 3)) for c in cands[:3]]))
    print("\n".join(map(str, report)))
    assert hits >= MIN_PAIRS_DETECTED, report


def test_whole_text_score_is_at_least_each_clause_alone(detector, cockpit):
    """A label's score is its best over the whole text and each clause: the pair never scores below a clause."""
    _, settings = cockpit
    text, first, second = "把天窗打开，然后把音量调小", "把天窗打开", "把音量调小"
    assert ClauseSplitter(settings.clauses).clauses(text) == [first, second]
    whole, a, b = ({c.intent: c.score for c in cands} for cands in detector.detect_batch([text, first, second]))
    for label, score in whole.items():
        assert score >= max(a[label], b[label]) - 1e-4, label


def test_chitchat_detects_no_task(detector, cockpit):
    _, settings = cockpit
    for text, cands in zip(
        ["晚上好啊", "帮我写一首关于秋天的诗"],
        detector.detect_batch(["晚上好啊", "帮我写一首关于秋天的诗"]),
        strict=True,
    ):
        assert cands[0].score < settings.detector.threshold, (text, cands[:3])


def test_batch_matches_one_by_one(detector, pair_results):
    texts = [t for t, _ in PAIRS] + ["打开车窗", "你好"]
    batch = detector.detect_batch(texts)
    assert_same_results(batch[: len(PAIRS)], pair_results)
    assert_same_results(batch, [detector.detect_batch([t])[0] for t in texts])
