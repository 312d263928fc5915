"""A disambiguation that converges (seed 003 §27.2): a `clarify` turn offers its options, and the next answer settles
the request it asked about — whether the answer chooses an option or gives what the request was missing.

In order: a stop ends it; an option named (its label, its id, 第二个) runs the request as that intent; an answer
routed surely to an intent that is no option is a request of its own (a new turn); an answer routed surely to an
option, or that fills a required slot only one option lacked (和房东见面的事 → 后天上午十点: only 新建 needed a time),
or the request and answer together routed surely to an option or cued for one, runs that option on the request and
the answer together; anything else asks again, with the options.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

from engine.cues import RequestCues
from engine.dialog_rules import DialogRules
from engine.fusion import RouteDecision
from engine.pack import Pack
from engine.replies import reply
from engine.responses import ResponsePolicy
from engine.router import Router
from engine.session import Asked, SessionState, SessionStatus
from engine.task import SingleTask
from engine.turn_context import TurnContext
from protocol.http_chat import ChatResponse, ClarifyOption, TurnStatus

NewTurn = Callable[[str], Awaitable[ChatResponse]]
_ORDINALS = {"一": 0, "1": 0, "二": 1, "两": 1, "2": 1, "三": 2, "3": 2, "四": 3, "4": 3}
_RE_ORDINAL = re.compile(r"^(?:第|选)?(?P<n>[一二两三四1-4])(?:个|项|种)?$")
_RE_SPACE = re.compile(r"[\s，。！？!?,.~、吧啊呀哦了的]+")


class Disambiguation:
    def __init__(
        self, *, pack: Pack, router: Router, task: SingleTask, rules: DialogRules, say: ResponsePolicy
    ) -> None:
        self._pack = pack
        self._router = router
        self._task = task
        self._rules = rules
        self._say = say
        self._cues = RequestCues(pack)

    def pick(self, text: str, options: list[str]) -> str | None:
        """The option the request's own words ask for (its cue), when routing was not sure."""
        return self._cues.pick(text, options)

    def over(self, text: str, routed: str) -> str | None:
        """The intent whose cue outranks a sure route to `routed` (engine/cues.py `over`)."""
        return self._cues.over(text, routed)

    def cued(self, text: str) -> set[str]:
        """Every intent whose cue `text` says."""
        return self._cues.said(text)

    def ask(self, session: SessionState, text: str, options: list[str], *, intent: str | None) -> ChatResponse:
        """The question, its options in the response, and the request kept for the answer."""
        session.asked = Asked(text=text, options=options)
        response = reply(session, TurnStatus.clarify, self._say.clarify(options), intent=intent)
        response.options = [
            ClarifyOption(value=i.id, label=i.label) for o in options if (i := self._pack.intent(o)) is not None
        ]
        return response

    async def answer(
        self, session: SessionState, text: str, slots: dict[str, Any] | None, ctx: TurnContext, new_turn: NewTurn
    ) -> ChatResponse:
        asked = session.asked
        assert asked is not None  # the caller checked
        session.asked = None
        if text and self._rules.is_stop(text):
            session.status = SessionStatus.stopped
            return reply(session, TurnStatus.stopped, self._say.simple("stopped"), intent=None)
        chosen = self._named(text, slots or {}, asked.options)
        if chosen is not None:
            return await self._task.execute(session, self._pack.known_intent(chosen), asked.text, ctx)
        if not text:
            return self.ask(session, asked.text, asked.options, intent=asked.options[0])
        together = f"{asked.text}，{text}"
        alone = await self._sure(text, ctx)
        if alone is not None and alone not in asked.options:
            return await new_turn(text)  # a request of its own: the question is dropped
        completed = self._completed(asked, text, ctx)
        settled = alone or (completed[0] if len(completed) == 1 else None)
        if settled is None:
            together_sure = await self._sure(together, ctx)
            settled = together_sure if together_sure in asked.options else None
        settled = settled or self._cues.pick(together, completed or asked.options)
        if settled is not None:
            return await self._task.execute(session, self._pack.known_intent(settled), together, ctx)
        return self.ask(session, asked.text, asked.options, intent=asked.options[0])

    async def _sure(self, text: str, ctx: TurnContext) -> str | None:
        """The intent routing executes `text` as, when it is sure of one."""
        route = await self._router.route(text, ctx.deadline)
        top = route.fusion.top
        return top.intent if top is not None and route.fusion.decision == RouteDecision.execute else None

    def _named(self, text: str, slots: dict[str, Any], options: list[str]) -> str | None:
        """The option the answer names: its id (`slots.intent`, or the text), its label, or its place (第二个)."""
        said = str(slots.get("intent") or text).strip()
        if said in options:
            return said
        norm = _RE_SPACE.sub("", said)
        ordinal = _RE_ORDINAL.match(norm)
        if ordinal is not None:
            place = _ORDINALS[ordinal.group("n")]
            return options[place] if place < len(options) else None
        labels = {o: i.label for o in options if (i := self._pack.intent(o)) is not None}
        named = [o for o, label in labels.items() if label in said or (len(norm) >= 2 and norm in label)]
        return named[0] if len(named) == 1 else None

    def _completed(self, asked: Asked, text: str, ctx: TurnContext) -> list[str]:
        """The options with a required slot the request lacked and the answer gives."""
        completed = []
        for option in asked.options:
            intent = self._pack.intent(option)
            required = [s for s in intent.slots if s.required] if intent else []
            if not required:
                continue
            had = self._task.extract(asked.text, required, ctx, free_text=False)
            gives = self._task.extract(text, [s for s in required if s.name not in had], ctx, free_text=False)
            if gives:
                completed.append(option)
        return completed
