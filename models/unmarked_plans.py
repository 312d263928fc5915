"""`planner.accept_unmarked` chosen per build on held-out folds: the score a step without a keyword of its own needs
when nothing in the words marks several requests.

A reason said before a request (这周过完了，帮我做个复盘) is a clause of its own, and how strongly the heads read it as
a request of its own depends on the encoder: one tuned on the pack's rows reads it more confidently than the frozen
one, so a threshold that suits one build makes workflows of another's single commands. Every training row is a
single command, so each row of several clauses that no word marks as several requests is planned here exactly as
`engine.workflow` plans it — the clause analysis over the heads' out-of-fold scores of each clause — and the least
threshold of the configured grid at which at most `max_share` of all the rows would become a workflow is chosen.
Counted as if the planner ran for every such row (it runs only when the detector reads two requests or fusion
does not accept), so the share is an upper bound.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

import numpy as np

from config.settings import Settings
from engine.clauses import ClauseSplitter
from engine.keyword import KeywordMatcher
from engine.pack import Pack
from engine.slot_filling import SlotFiller
from engine.slots import SlotLimits
from engine.workflow.analysis import ClauseAnalyzer
from engine.workflow.planners import TurnAnalysis
from engine.workflow.planning import EVIDENCE_SLOTS
from engine.workflow.trigger import PlanTrigger
from protocol.turn_debug import Candidate


class UnmarkedPlans:
    def __init__(self, pack: Pack, settings: Settings) -> None:
        self._pack = pack
        self._planner = settings.planner
        self.splitter = ClauseSplitter(settings.clauses)
        tz = ZoneInfo(settings.timezone)
        slots = SlotFiller(
            limits=SlotLimits(
                temperature_min=settings.slots.temperature_min, temperature_max=settings.slots.temperature_max
            ),
            tz=tz,
            clock=lambda: datetime.now(tz),
        )
        self._slot_values = lambda text: set(slots.extract(text, EVIDENCE_SLOTS))
        self._trigger = PlanTrigger(
            self._planner, KeywordMatcher(pack), ClauseAnalyzer(pack, self._planner, slot_values=self._slot_values)
        )

    def unmarked(self, text: str) -> list[str]:
        """The clauses of `text` when it has several and no word marks several requests; else []."""
        clauses = self.splitter.clauses(text)
        return clauses if len(clauses) > 1 and not self._trigger.lexical(text, clauses) else []

    def choose(
        self,
        texts: Sequence[str],
        clause_texts: Sequence[str],
        clause_rows: np.ndarray,
        labels: Sequence[str],
        classifier: np.ndarray,
        detector_labels: Sequence[str],
        detector: np.ndarray,
        *,
        grid: Sequence[float],
        max_share: float,
        top_k: int,
    ) -> tuple[float, dict[str, Any]]:
        """The least value of `grid` at which at most `max_share` of the `texts` (single commands) are planned into
        a workflow, from each clause's out-of-fold classifier probabilities (over `labels`) and detector scores
        (over `detector_labels`); the largest when none is. Returns it and the share at each value tried."""
        by_row: dict[int, list[int]] = {}
        for n, row in enumerate(clause_rows):
            by_row.setdefault(int(row), []).append(n)
        curve: list[dict[str, Any]] = []
        for value in sorted(grid):
            analyzer = ClauseAnalyzer(
                self._pack, self._planner.model_copy(update={"accept_unmarked": value}), slot_values=self._slot_values
            )
            planned = []
            for row, members in by_row.items():
                scored = [
                    analyzer.analyze(
                        clause_texts[n],
                        classifier=_ranked(classifier[n], labels, top_k),
                        detector=_ranked(detector[n], detector_labels, top_k),
                        marked=False,
                    )
                    for n in members
                ]
                if len(TurnAnalysis(text=texts[row], clauses=scored).matched()) > 1:
                    planned.append(texts[row])
            curve.append(
                {
                    "accept_unmarked": value,
                    "planned": len(planned),
                    "share": len(planned) / max(1, len(texts)),
                    "examples": planned[:5],
                }
            )
        fits = [c for c in curve if c["share"] <= max_share]
        chosen = fits[0] if fits else curve[-1]
        return float(chosen["accept_unmarked"]), {
            "rows": len(texts),
            "rows_of_unmarked_clauses": len(by_row),
            "max_share": max_share,
            "chosen": chosen["accept_unmarked"],
            "by_accept_unmarked": curve,
        }


def _ranked(scores: np.ndarray, labels: Sequence[str], k: int) -> list[Candidate]:
    return [Candidate(intent=labels[j], score=float(scores[j])) for j in np.argsort(-scores)[:k]]
