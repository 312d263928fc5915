"""When to plan (seed 003 §15.1). The planner runs on a connective at a clause boundary (然后, 并且, 先…再 …), a
clause stating a condition (如果…就), two clauses naming different requests (the detector reads two intents, or
their keywords name two), parallel requests joined in one clause (打开车窗和天窗: a keyword in each part), or a
turn of several requests fusion did not accept — and only then, so a clear single command such as
太热了，开下空调 (a reason, then one request) never pays for it."""

from __future__ import annotations

import re

from config.engine import PlannerConfig
from engine.fusion import RouteDecision
from engine.keyword import KeywordMatcher
from engine.router import Route
from engine.workflow.analysis import ClauseAnalyzer

LEXICAL = frozenset({"connective", "condition", "clauses", "parallel"})  # the words mark several requests


class PlanTrigger:
    def __init__(self, cfg: PlannerConfig, keywords: KeywordMatcher, analyzer: ClauseAnalyzer) -> None:
        self._connective = re.compile(cfg.connectives)
        self._conditional = re.compile(cfg.conditional)
        self._parallel = re.compile(cfg.parallel)
        self._keywords = keywords
        self._analyzer = analyzer

    def lexical(self, text: str, clauses: list[str]) -> str | None:
        """The reason to plan that the words alone give, or None."""
        if self._connective.search(text):
            return "connective"
        if len(clauses) > 1 and any(self._conditional.match(c) for c in clauses):
            return "condition"
        if len(clauses) > 1:
            named = [{c.intent for c in self._keywords.match(clause)} for clause in clauses]
            named = [n for n in named if n]
            if len(named) > 1 and len(set().union(*named)) > 1:
                return "clauses"
        if any(self._analyzer.parallel_requests(c) for c in clauses):
            return "parallel"
        return None

    def reason(self, text: str, clauses: list[str], route: Route) -> str | None:
        """Why this turn is planned, or None: it is not."""
        found = self.lexical(text, clauses)
        if found:
            return found
        if len(clauses) > 1 and route.multi_intent:
            return "detector"
        # fusion did not accept: worth planning when there is more than one request to find — several clauses,
        # or parallel ones joined inside one (打开车窗和天窗); one plain clause only a remote planner could help
        if route.fusion.decision != RouteDecision.execute and (len(clauses) > 1 or self._parallel.search(text)):
            return "not_accepted"
        return None
