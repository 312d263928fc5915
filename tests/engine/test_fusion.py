"""engine.fusion.fuse: weighted scores, accepted bonus, degraded stages, and the four decisions."""

from __future__ import annotations

import pytest

from engine.fusion import RouteDecision, fuse, stage_debug
from protocol.turn_debug import Candidate, StageDebug
from tests.support.fakes import base_settings

CFG = base_settings().fusion
W = CFG.weights
BONUS = CFG.accepted_bonus


def stage(name: str, *scores: tuple[str, float]) -> StageDebug:
    return stage_debug([Candidate(intent=i, score=s) for i, s in scores], CFG.stage_accept[name])


def ranked(result) -> dict[str, float]:
    return {c.intent: c.score for c in result.ranked}


def test_config_matches_the_numbers_these_tests_reason_with() -> None:
    assert (W["keyword"], W["classifier"], W["retriever"]) == (1.15, 1.0, 0.75)
    assert BONUS == 0.25 and CFG.execute_threshold == 1.65 and CFG.route_to_cloud_threshold == 0.75
    assert CFG.clarify_margin == 0.12
    assert (CFG.classifier_execute_score, CFG.classifier_execute_margin) == (0.55, 0.18)


def test_stage_debug_accepts_only_a_top_at_or_above_the_threshold() -> None:
    s = stage("classifier", ("a", 0.5), ("b", 0.2))
    assert s.accepted and s.selected_intent == "a" and s.score == 0.5
    assert not stage("classifier", ("a", 0.49)).accepted
    empty = stage("retriever")
    assert not empty.accepted and empty.selected_intent is None and empty.score == 0.0


def test_execute_when_keyword_and_classifier_agree() -> None:
    result = fuse(
        {
            "keyword": stage("keyword", ("cabin_window_open", 1.0)),
            "classifier": stage("classifier", ("cabin_window_open", 0.9), ("cabin_window_close", 0.05)),
        },
        CFG,
    )
    assert result.decision == RouteDecision.execute
    assert result.top.intent == "cabin_window_open"
    assert result.top.score == pytest.approx(1.15 + BONUS + 0.9 + BONUS)
    assert ranked(result)["cabin_window_close"] == pytest.approx(0.05)
    assert "keyword+classifier" in result.reason


def test_keyword_alone_below_threshold_does_not_execute() -> None:
    result = fuse({"keyword": stage("keyword", ("cabin_window_open", 1.0))}, CFG)
    assert result.top.score == pytest.approx(1.4)
    assert result.decision == RouteDecision.route_to_cloud


def test_confident_classifier_executes_alone() -> None:
    result = fuse({"classifier": stage("classifier", ("cabin_nav_to", 0.9), ("cabin_nav_cancel", 0.05))}, CFG)
    assert result.top.score == pytest.approx(0.9 + BONUS)  # below 1.65, but the classifier is sure
    assert result.decision == RouteDecision.execute
    assert "classifier confident" in result.reason


def test_classifier_with_small_margin_is_not_sure() -> None:
    # 0.6 ≥ 0.55 but margin 0.1 < 0.18: not sure; 0.85 ≥ 0.75 with a clear fused margin → route_to_cloud
    result = fuse({"classifier": stage("classifier", ("a", 0.6), ("b", 0.5))}, CFG)
    assert result.top.score == pytest.approx(0.85)
    assert result.decision == RouteDecision.route_to_cloud


def test_clarify_when_two_candidates_are_close() -> None:
    result = fuse(
        {
            "classifier": stage("classifier", ("cabin_window_open", 0.45), ("cabin_sunroof_open", 0.42)),
            "retriever": stage("retriever", ("cabin_window_open", 0.45), ("cabin_sunroof_open", 0.44)),
        },
        CFG,
    )
    scores = ranked(result)
    assert scores["cabin_window_open"] == pytest.approx(0.45 + 0.75 * 0.45)
    assert scores["cabin_sunroof_open"] == pytest.approx(0.42 + 0.75 * 0.44)
    assert result.decision == RouteDecision.clarify
    assert [c.intent for c in result.ranked[:2]] == ["cabin_window_open", "cabin_sunroof_open"]
    debug = result.debug()
    assert debug.decision == "clarify" and 0 < debug.margin < CFG.clarify_margin


def test_single_candidate_between_thresholds_routes_to_cloud_not_clarify() -> None:
    result = fuse({"classifier": stage("classifier", ("a", 0.45)), "retriever": stage("retriever", ("a", 0.45))}, CFG)
    assert CFG.route_to_cloud_threshold <= result.top.score < CFG.execute_threshold
    assert result.decision == RouteDecision.route_to_cloud


@pytest.mark.parametrize(
    ("score", "decision"),
    [(0.74, RouteDecision.reject), (0.75, RouteDecision.route_to_cloud), (0.76, RouteDecision.route_to_cloud)],
)
def test_route_to_cloud_threshold_boundary(score: float, decision: RouteDecision) -> None:
    cfg = CFG.model_copy(update={"weights": {**W, "retriever": 1.0}, "accepted_bonus": 0.0})
    result = fuse({"retriever": stage("retriever", ("a", score))}, cfg)
    assert result.top.score == pytest.approx(score)
    assert result.decision == decision


@pytest.mark.parametrize(("score", "decision"), [(1.64, RouteDecision.route_to_cloud), (1.65, RouteDecision.execute)])
def test_execute_threshold_boundary(score: float, decision: RouteDecision) -> None:
    cfg = CFG.model_copy(update={"weights": {**W, "keyword": score - BONUS}})
    result = fuse({"keyword": stage("keyword", ("a", 1.0))}, cfg)
    assert result.top.score == pytest.approx(score)
    assert result.decision == decision


def test_reject_low_score_and_empty() -> None:
    low = fuse({"classifier": stage("classifier", ("a", 0.3))}, CFG)
    assert low.decision == RouteDecision.reject and low.top.intent == "a"
    empty = fuse({"keyword": stage("keyword"), "classifier": stage("classifier")}, CFG)
    assert empty.decision == RouteDecision.reject and empty.ranked == [] and empty.top is None
    assert empty.debug().top_score == 0.0


def test_one_non_keyword_backer_needs_classifier_certainty_even_above_threshold() -> None:
    cfg = CFG.model_copy(update={"execute_threshold": 1.0})
    result = fuse(
        {"classifier": stage("classifier", ("a", 0.6), ("b", 0.55)), "retriever": stage("retriever", ("a", 0.4))}, cfg
    )
    assert result.top.score == pytest.approx(0.6 + BONUS + 0.3)
    assert result.top.score >= cfg.execute_threshold
    assert result.decision == RouteDecision.route_to_cloud
    both = fuse(
        {"classifier": stage("classifier", ("a", 0.6), ("b", 0.55)), "retriever": stage("retriever", ("a", 0.6))}, cfg
    )
    assert both.decision == RouteDecision.execute and "classifier+retriever" in both.reason


def test_degraded_stages_are_ignored() -> None:
    hung = StageDebug(
        degraded=True,
        accepted=True,
        selected_intent="cabin_window_close",
        score=0.99,
        candidates=[Candidate(intent="cabin_window_close", score=0.99)],
        error="classifier exceeded 50 ms",
    )
    result = fuse(
        {
            "keyword": stage("keyword", ("cabin_window_open", 1.0)),
            "classifier": hung,
            "retriever": stage("retriever", ("cabin_window_open", 0.9)),
        },
        CFG,
    )
    assert "cabin_window_close" not in ranked(result)
    assert result.decision == RouteDecision.execute and result.top.intent == "cabin_window_open"
    assert "keyword+retriever" in result.reason
    # a degraded "sure" classifier alone must not execute either
    alone = fuse({"classifier": hung}, CFG)
    assert alone.decision == RouteDecision.reject and alone.ranked == []


def test_accepted_bonus_applies_only_to_the_accepted_top() -> None:
    accepted = fuse({"retriever": stage("retriever", ("a", 0.5), ("b", 0.45))}, CFG)
    assert ranked(accepted)["a"] == pytest.approx(0.75 * 0.5 + BONUS)
    assert ranked(accepted)["b"] == pytest.approx(0.75 * 0.45)
    below = fuse({"retriever": stage("retriever", ("a", 0.49))}, CFG)
    assert ranked(below)["a"] == pytest.approx(0.75 * 0.49)
    bigger = fuse({"retriever": stage("retriever", ("a", 0.5))}, CFG.model_copy(update={"accepted_bonus": 1.0}))
    assert ranked(bigger)["a"] == pytest.approx(0.375 + 1.0)


def test_bonus_can_reorder_candidates() -> None:
    # b has more raw weight, but a is the keyword stage's accepted top
    result = fuse(
        {
            "keyword": stage("keyword", ("a", 1.0)),
            "classifier": stage("classifier", ("b", 0.4)),
            "retriever": stage("retriever", ("b", 0.4)),
        },
        CFG.model_copy(update={"weights": {**W, "keyword": 0.5}}),
    )
    assert [c.intent for c in result.ranked] == ["a", "b"]
    assert ranked(result)["a"] == pytest.approx(0.5 + BONUS)
    assert ranked(result)["b"] == pytest.approx(0.4 + 0.75 * 0.4)  # more raw weight than a (0.5) but no bonus


def test_a_confident_classifier_decides_the_top_when_configured() -> None:
    """A keyword pulling elsewhere outweighs a 0.8 classifier in the weighted sum; with `classifier_decides_at`
    at or below 0.8 the classifier's intent ranks first, the others keep their fused order and scores."""
    stages = {
        "keyword": stage("keyword", ("cabin_window_close", 1.0)),
        "classifier": stage("classifier", ("cabin_window_open", 0.8), ("cabin_window_close", 0.15)),
        "retriever": stage("retriever", ("cabin_window_close", 0.6), ("cabin_window_open", 0.4)),
    }
    plain = fuse(stages, CFG)
    assert plain.top.intent == "cabin_window_close"
    decided = fuse(stages, CFG.model_copy(update={"classifier_decides_at": 0.8}))
    assert decided.top.intent == "cabin_window_open"
    assert ranked(decided) == ranked(plain)  # the same scores, another order
    assert decided.decision == RouteDecision.execute and "classifier confident" in decided.reason
    assert fuse(stages, CFG.model_copy(update={"classifier_decides_at": 0.81})).top.intent == "cabin_window_close"


def test_a_degraded_classifier_never_decides() -> None:
    clf = stage("classifier", ("cabin_window_open", 0.95)).model_copy(update={"degraded": True, "partial": True})
    result = fuse(
        {"keyword": stage("keyword", ("cabin_window_close", 1.0)), "classifier": clf},
        CFG.model_copy(update={"classifier_decides_at": 0.5}),
    )
    assert result.top.intent == "cabin_window_close"
