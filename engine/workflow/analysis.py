"""Clause analysis (seed 003 §17.1–§17.4): each clause of the turn scored per intent from lexical evidence fused
with the served classifier's and detector's scores for that clause (one encoder pass embedded the clauses)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from config.engine import PlannerConfig
from engine.keyword import KeywordMatcher
from engine.pack import SPECIAL_INTENTS, Intent, Pack
from engine.polarity import Polarity
from protocol.turn_debug import Candidate

_SKIP = re.compile(r"[\s，。！？!?,.~、吧啊呀哦了的把给我帮请一下]+")
EVIDENCE = ("keyword", "classifier", "detector", "example", "slot")


@dataclass
class ClauseScore:
    """One clause: its words (the action part of a conditional clause), its condition if it states one, the
    fused score per intent, and the intents chosen as steps (two or more: parallel requests in one clause)."""

    text: str
    condition: str | None = None
    scores: dict[str, float] = field(default_factory=dict)
    selected: list[str] = field(default_factory=list)

    def ranked(self, k: int = 5) -> list[Candidate]:
        return [
            Candidate(intent=i, score=round(s, 4)) for i, s in sorted(self.scores.items(), key=lambda kv: -kv[1])[:k]
        ]


def _bigrams(text: str) -> frozenset[str]:
    norm = _SKIP.sub("", text)
    return frozenset(norm[i : i + 2] for i in range(len(norm) - 1)) or frozenset({norm})


class ClauseAnalyzer:
    def __init__(self, pack: Pack, cfg: PlannerConfig, slot_values: Callable[[str], set[str]] | None = None) -> None:
        """`slot_values(text)`: the slot types a value is said for in `text` (a temperature, an order number)."""
        self._cfg = cfg
        self._slot_values = slot_values or (lambda text: set())
        self._intents = [i for i in pack.intents if i.id not in SPECIAL_INTENTS]
        self._keywords = KeywordMatcher(pack)
        self._task_ids = {i.id for i in self._intents}
        # the training examples' character bigrams, indexed by bigram: a clause meets only the examples it shares
        # one with
        self._sizes: list[tuple[str, int]] = []
        self._by_gram: dict[str, list[int]] = {}
        for intent in self._intents:
            for example in intent.examples:
                grams = _bigrams(example)
                for g in grams:
                    self._by_gram.setdefault(g, []).append(len(self._sizes))
                self._sizes.append((intent.id, len(grams)))
        self._conditional = re.compile(cfg.conditional)
        self._parallel = re.compile(cfg.parallel)
        self._elliptic = re.compile(cfg.elliptic)
        self._state = re.compile(cfg.state) if cfg.state else None
        self._polarity = Polarity(pack.rules)

    def split_condition(self, clause: str) -> tuple[str, str | None]:
        """A clause stating a condition (如果还没发货就帮我取消) is scored on its action; the condition is kept."""
        m = self._conditional.match(clause)
        if not m:
            return clause, None
        condition = next(v for k, v in m.groupdict().items() if k.startswith("condition") and v)
        return m["action"].strip(), condition.strip()

    def analyze(
        self, clause: str, *, classifier: list[Candidate], detector: list[Candidate], marked: bool = True
    ) -> ClauseScore:
        """Score `clause` for every task intent; `marked`: the words themselves mark several requests (a
        connective, a condition, keywords in two clauses)."""
        action, condition = self.split_condition(clause)
        slot_hits = self._slot_values(action)
        w = self._cfg.weights
        cls = {c.intent: c.score for c in classifier}
        det = {c.intent: c.score for c in detector}
        spans = self._keyword_spans(action)
        examples = self._example_overlap(_bigrams(action))
        result = ClauseScore(text=action, condition=condition)
        for intent in self._intents:
            lexical = {
                "keyword": 1.0 if intent.id in spans else 0.0,
                "example": examples.get(intent.id, 0.0),
                "slot": 1.0
                if slot_hits & {s.type for s in intent.slots if s.type in ("temperature", "order_id")}
                else 0.0,
            }
            model = cls.get(intent.id, 0.0)
            score = (
                sum(w.get(k, 0.0) * v for k, v in lexical.items())
                + w.get("classifier", 0.0) * model
                + w.get("detector", 0.0) * det.get(intent.id, 0.0)
            )
            if score > 0:
                result.scores[intent.id] = score
        result.selected = self._select(result, spans, cls, marked)
        return result

    def _example_overlap(self, grams: frozenset[str]) -> dict[str, float]:
        """Per intent, the best Jaccard overlap of `grams` with one of its training examples' bigrams."""
        shared: dict[int, int] = {}
        for g in grams:
            for n in self._by_gram.get(g, ()):
                shared[n] = shared.get(n, 0) + 1
        best: dict[str, float] = {}
        for n, common in shared.items():
            intent, size = self._sizes[n]
            overlap = common / (len(grams) + size - common)
            if overlap > best.get(intent, 0.0):
                best[intent] = overlap
        return best

    def _select(
        self, clause: ClauseScore, spans: dict[str, tuple[int, int]], cls: dict[str, float], marked: bool
    ) -> list[str]:
        ranked = sorted(clause.scores.items(), key=lambda kv: -kv[1])
        if not ranked or self._elliptic.match(_SKIP.sub("", clause.text)):
            return []
        if self._state is not None and self._state.search(clause.text):
            return []  # 窗户开着呢: what is, said as the reason for another clause's request
        top, score = ranked[0]
        lexical = (
            top in spans
            or clause.scores.get(top, 0.0) - self._cfg.weights.get("classifier", 0.0) * cls.get(top, 0.0) > 0.3
        )
        if score < self._cfg.accept or not (lexical or cls.get(top, 0.0) >= self._cfg.model_accept):
            return []
        if not marked and top not in spans and score < self._cfg.accept_unmarked:
            return []
        top = self._polarity.other(clause.text, top) or top  # 空调没必要开, 把镜子展开: the side the clause asks for
        return [top, *self.parallel_requests(clause.text, top)]

    def parallel_requests(self, text: str, top: str | None = None) -> list[str]:
        """Further requests joined inside one clause (打开车窗和天窗, 关掉空调和座椅加热) after `top` (default: the
        first part's keyword intent): each joined part naming another intent's keyword, on its own or with the first
        part's verb (打开 + 天窗). Empty when the clause holds one request."""
        pieces = [p.strip() for p in self._parallel.split(text) if p.strip()]
        if len(pieces) < 2:
            return []
        head = pieces[0]
        first = top or next(iter(self._keyword_spans(head)), None)
        if first is None:
            return []
        found: list[str] = []
        for piece in pieces[1:]:
            borrowed = [head[: len(head) - len(piece)] + piece] if len(piece) < len(head) else []
            for words in [piece, *borrowed]:
                hits = [i for i in self._keyword_spans(words) if i != first and i not in found]
                if hits:
                    found.append(hits[0])
                    break
        return found

    def _keyword_spans(self, text: str) -> dict[str, tuple[int, int]]:
        """Per task intent, where its longest keyword occurs in `text` (not right after a negation)."""
        return {i: span for i, span in self._keywords.spans(text).items() if i in self._task_ids}


def intent_label(intent: Intent | None) -> str:
    return intent.label if intent else ""
