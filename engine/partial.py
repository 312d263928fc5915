"""The partial-request rule: in a turn of several clauses, the clauses that ask for an action outside the pack's
catalog are not dropped in silence. The doable clauses run as they would alone (steps, order, confirmations,
conditions), and the reply names the rest in the user's words through the pack's `not_done` template; the response
lists them (`not_done`). A request wholly outside the catalog stays a refusal, and a clause that only gives a reason
or an aside (因为要下雨了, 我有点冷) is never named.

A clause asks for something outside the catalog when all of these hold (measured on
tests/data/partial_requests.yaml, both packs):
- the classifier's top for that clause (the turn's one encoder pass embedded it) is the out-of-scope class at
  `partial.outside_min` or more: the packs train that class on requests they cannot do (订机票, 后备箱掀开);
- no task intent's keyword occurs in it (a keyword means the catalog reads it, whatever the model says);
- its words ask for an action (`partial.request`: 帮我…, 把…打开, 订, 买) and give no reason (`partial.reason`).

The rule reads the route only (clauses and their classifier scores), so it holds whichever planner answered — the
local planners, the LLM planner, or none — and one call in the turn engine serves both transports."""

from __future__ import annotations

import re
from collections.abc import Sequence

from config.engine import PartialConfig
from engine.keyword import KeywordMatcher
from engine.pack import OUT_OF_SCOPE, SPECIAL_INTENTS, Pack
from engine.responses import render
from engine.router import Route
from protocol.http_chat import ChatResponse, TurnStatus
from protocol.turn_debug import Candidate
from protocol.workflow import NotDone

# a turn that ends in these says nothing about parts: a refusal, a social reply, a stop, a fallback
UNTOLD = frozenset({TurnStatus.rejected, TurnStatus.social, TurnStatus.stopped, TurnStatus.fallback})
QUESTIONS = frozenset({TurnStatus.waiting_slot, TurnStatus.waiting_confirmation, TurnStatus.clarify})
DEFAULT_TEMPLATE = "{what}我还做不到。"
_POLITE = re.compile(r"^(?:(?:再|另外|顺便|还有|也|你|就)*(?:帮我|帮忙|请你?|麻烦你?|给我)+)+")
_PARTICLES = re.compile(r"[吧啊呀哦嘛呢了～~]+$")
# 把后备箱打开 -> 打开后备箱: the object after its verb reads as a name of the action
_BA = re.compile(r"^把(?P<what>.+?)(?P<verb>(?:打|关|掀|合|放|落|升|降|收|锁|解|弄|开)[开上掉闭下起来好了]{0,2})$")


def spoken(clause: str) -> str:
    """The clause as the reply names it: without the polite opening and closing particles, 把-object after its verb
    (帮我把后备箱打开 -> 打开后备箱)."""
    words = _PARTICLES.sub("", _POLITE.sub("", clause.strip(" ，,。！!"))) or clause
    ba = _BA.match(words)
    return f"{ba['verb']}{ba['what']}" if ba else words


class PartialRequests:
    def __init__(self, *, pack: Pack, cfg: PartialConfig, model_accept: float, keywords: KeywordMatcher) -> None:
        """`model_accept`: the classifier's clause score that makes a clause doable alone (`planner.model_accept`)."""
        self._outside_min = cfg.outside_min
        self._model_accept = model_accept
        self._request = re.compile(cfg.request)
        self._reason = re.compile(cfg.reason)
        self._keywords = keywords
        self._tasks = {i.id for i in pack.intents if i.id not in SPECIAL_INTENTS}
        self._template = pack.responses.get("not_done", DEFAULT_TEMPLATE)

    def outside(self, route: Route) -> list[NotDone]:
        """The clauses of the turn that ask for an action outside the catalog, in the order said; none for a turn of
        one clause, a turn whose classifier degraded, or a turn wholly outside (the refusal says that)."""
        per_clause = route.clause_scores.get("classifier")
        if len(route.clauses) < 2 or not per_clause:
            return []
        found = [
            NotDone(text=clause, reason="outside_catalog")
            for clause, candidates in zip(route.clauses, per_clause, strict=False)
            if self.asks_outside(clause, candidates)
        ]
        return [] if len(found) == len(route.clauses) else found

    def asks_outside(self, clause: str, candidates: Sequence[Candidate]) -> bool:
        top = max(candidates, key=lambda c: c.score, default=None)
        if top is None or top.intent != OUT_OF_SCOPE or top.score < self._outside_min:
            return False
        if any(i in self._tasks for i in self._keywords.spans(clause)):
            return False
        return bool(self._request.search(clause)) and not self._reason.search(clause)

    def doable(self, route: Route, not_done: Sequence[NotDone]) -> str | None:
        """The one task intent the turn's other clauses ask for, when the out-of-scope ones are set aside (帮我打个电话
        给张三 beside 把后排除雾打开): the turn then runs it instead of refusing the whole; None when they ask for none
        or several."""
        outside = {n.text for n in not_done}
        per_clause = route.clause_scores.get("classifier", ())
        chosen = set()
        for clause, candidates in zip(route.clauses, per_clause, strict=False):
            if clause in outside:
                continue
            top = max(candidates, key=lambda c: c.score, default=None)
            if top is not None and top.intent in self._tasks and top.score >= self._model_accept:
                chosen.add(top.intent)
        return chosen.pop() if len(chosen) == 1 else None

    def sentence(self, not_done: Sequence[NotDone]) -> str:
        """The pack's words naming what is not done (打开后备箱我还做不到。)."""
        names = list(dict.fromkeys(spoken(n.text) for n in not_done))
        what = "、".join(names[:-1]) + f"和{names[-1]}" if len(names) > 1 else names[0]
        return render(self._template, what=what)

    def tell(self, response: ChatResponse, not_done: Sequence[NotDone]) -> ChatResponse:
        """`response` naming `not_done`: after what was done, before the question the turn asks. A clause a workflow
        step carries (a planner chose it after all) is done, not named."""
        if response.status in UNTOLD:
            return response
        carried = {s.clause for s in response.workflow.steps} if response.workflow is not None else set()
        left = [n for n in not_done if n.text not in carried]
        if not left:
            return response
        said = self.sentence(left)
        response.not_done = left
        if said in response.reply:  # said already (the agents' last result on a pack with them)
            return response
        response.reply = said + response.reply if response.status in QUESTIONS else response.reply + said
        return response
