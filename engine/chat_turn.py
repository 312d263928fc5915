"""One chat turn on a loaded session (seed 003 §8, §19): a paused workflow's answer, social replies, then rewrite,
routing, the planner stage with its LLM escalation, and the decision between executing, asking and refusing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from config.settings import Settings
from engine.deadline import StageTimeout
from engine.dialog_rules import DialogRules
from engine.disambiguation import Disambiguation
from engine.fusion import RouteDecision
from engine.llm.replies import Replies
from engine.pack import OUT_OF_SCOPE, SOCIAL, SPECIAL_INTENTS, Pack
from engine.partial import PartialRequests
from engine.polarity import Polarity
from engine.replies import decision, reply
from engine.responses import ResponsePolicy
from engine.rewrite import rewrite
from engine.router import Route, Router
from engine.session import SessionState, SessionStatus
from engine.social import SocialRouter
from engine.task import SingleTask
from engine.turn_context import TurnContext
from engine.workflow.planners import settle
from engine.workflow.replies import leave_workflow, workflow_response
from engine.workflow.turns import Outcome, WorkflowTurns
from protocol.http_chat import ChatResponse, TurnStatus
from protocol.turn_debug import RewriteDebug, RoutingDebug


class ChatTurn:
    """The turn logic behind `TurnEngine.chat_on`, over the engine's own stages (built once, in `TurnEngine`)."""

    def __init__(
        self,
        *,
        pack: Pack,
        settings: Settings,
        rules: DialogRules,
        social: SocialRouter,
        router: Router,
        polarity: Polarity,
        say: ResponsePolicy,
        task: SingleTask,
        flows: WorkflowTurns,
        replies: Replies | None,
        clock: Callable[[], datetime],
        disambiguation: Disambiguation,
        partial: PartialRequests,
    ) -> None:
        self._pack = pack
        self._settings = settings
        self._rules = rules
        self._social = social
        self._router = router
        self._polarity = polarity
        self._say = say
        self._task = task
        self._flows = flows
        self._replies = replies
        self._clock = clock
        self._disambiguation = disambiguation
        self._partial = partial

    async def run(self, session: SessionState, text: str, ctx: TurnContext) -> ChatResponse:
        """The chat turn on `session` (mutated in place): a paused workflow's answer, a pending task's, a social
        reply, or the text rewritten, routed, planned and decided."""
        session.asked = None  # a new message leaves an open disambiguation unanswered (fill-slots answers it)
        # a paused workflow first: a confirmation answer, a stop, or a slot value in so many words (22度, A12345);
        # a bare answer to a slot question (公司) counts only if it is not a command of its own (decided below)
        maybe_answer = False
        if self._flows.active(session):
            strict = self._flows.waiting_slot(session) and not self._rules.is_stop(text)
            outcome = await self._flows.resume(
                session, text, None, self._task.runner(ctx), ctx.step, free_text=not strict
            )
            if outcome is not None:
                return self._workflow_response(session, outcome)
            maybe_answer = strict
        if not maybe_answer:
            leave_workflow(session)
        if session.has_active_task and (
            self._rules.is_stop(text) or session.status == SessionStatus.waiting_confirmation
        ):
            return await self._task.resume(session, text, None, ctx)
        category = self._social.route(text)
        if category:
            return await self._social_reply(session, category, text=text, ctx=ctx)

        rewritten = rewrite(text, current_intent=session.current_intent, memory=session.memory)
        route = await self._router.route(rewritten.text, ctx.deadline)
        ctx.vector = route.vector
        ctx.not_done = self._partial.outside(route)
        debug = RoutingDebug(
            rewrite=RewriteDebug(
                applied=rewritten.applied, original_text=text, rewritten_text=rewritten.text, reason=rewritten.reason
            ),
            stages=route.stages,
            fusion=route.fusion.debug(),
            detector=route.detector,
        )
        if maybe_answer:
            top = route.fusion.top.intent if route.fusion.top else None
            if not (route.fusion.decision == RouteDecision.execute and top != session.current_intent):
                outcome = await self._flows.resume(
                    session, text, None, self._task.runner(ctx), ctx.step, free_text=True
                )
                if outcome is not None:
                    response = self._workflow_response(session, outcome)
                    response.routing_debug = debug
                    return response
            leave_workflow(session)
        planned = await self._flows.plan(rewritten.text, route, ctx.deadline)
        if planned is not None:
            plan, debug.planner = planned
            escalation = self._flows.escalation
            if escalation is not None and escalation.wanted(plan, debug.planner, ctx.deadline):
                await ctx.escalate(self._say.simple("planning"), escalation.extra_ms)
                plan = await escalation.plan(
                    rewritten.text,
                    plan,
                    debug.planner,
                    ctx.deadline,
                    now=self._clock(),
                    history=await self._history(ctx, session),
                    memory=await self._recall(ctx, rewritten.text),
                    user_profile=await self._profile(ctx),
                )
            if plan.accepted and plan.workflow is not None:
                await ctx.ack(self._say.simple("ack"), plan.workflow)
                response = self._workflow_response(
                    session, await self._flows.start(session, plan.workflow, self._task.runner(ctx), ctx.step)
                )
                response.routing_debug, response.detected_intents, response.multi_intent = debug, route.detected, True
                return response
            route.fusion = settle(route.fusion, plan, rewritten.text, self._polarity)
        top = route.fusion.top.intent if route.fusion.top else None
        doable = self._partial.doable(route, ctx.not_done) if ctx.not_done and top == OUT_OF_SCOPE else None
        if doable is not None:  # the out-of-scope clauses pulled the whole turn outside: the doable one runs
            route.fusion = route.fusion.settled(doable, f"the one clause inside the catalog reads {doable}")
        debug.fusion = route.fusion.debug()
        response = await self._decide(session, rewritten.text, route, ctx)
        debug.replies = ctx.replies
        response.routing_debug = debug
        response.detected_intents = route.detected
        response.multi_intent = route.multi_intent
        return response

    async def answer(
        self, session: SessionState, text: str, slots: dict[str, Any] | None, ctx: TurnContext
    ) -> ChatResponse:
        """The answer to the disambiguation `session.asked` holds (engine/disambiguation.py)."""
        return await self._disambiguation.answer(session, text, slots, ctx, lambda said: self.run(session, said, ctx))

    async def _decide(self, session: SessionState, text: str, route: Route, ctx: TurnContext) -> ChatResponse:
        fusion = route.fusion
        top = fusion.top.intent if fusion.top else None
        executing_other = fusion.decision == RouteDecision.execute and top != session.current_intent
        if session.status == SessionStatus.waiting_slot and not executing_other:
            filled = self._task.extract(text, self._task.pending_specs(session), ctx, free_text=False)
            if filled:
                return await self._task.resume(session, text, filled, ctx)

        if top == SOCIAL and fusion.decision != RouteDecision.reject:
            return await self._social_reply(session, "chitchat", intent=top, text=text, ctx=ctx)
        if route.multi_intent and fusion.decision != RouteDecision.reject and not self._one_agent_request(text, route):
            return self._multi_decision(session, text, route, ctx)
        if fusion.decision == RouteDecision.execute and top and top != OUT_OF_SCOPE:
            top = self._sole_cue(text, route) or self._disambiguation.over(text, top) or top
            return await self._task.execute(session, self._pack.known_intent(top), text, ctx)
        weak = (
            fusion.decision == RouteDecision.reject
            and (fusion.top.score if fusion.top else 0.0) < self._settings.fusion.clarify_floor
        )
        # routing unsure (anything but a sure execute): the request's own words settle it among the candidates
        # (安排一个… asks for a new item, 参加了 says what was done), even against an out-of-scope reading, weak or
        # sure: a thing the models never saw (帮我约一个和律师的会面) is still asked for with a request's verb, and
        # then any intent of the pack may be the one its cue names
        candidates = [c.intent for c in fusion.ranked if c.intent not in SPECIAL_INTENTS]
        outside = top == OUT_OF_SCOPE
        pool = [*candidates, *sorted(self._disambiguation.cued(text))] if outside else candidates
        cued = self._disambiguation.pick(text, pool) if fusion.decision != RouteDecision.execute or outside else None
        if cued is not None:
            return await self._task.execute(session, self._pack.known_intent(cued), text, ctx)
        if top == OUT_OF_SCOPE or weak or not fusion.ranked:
            if not fusion.ranked and ctx.deadline.degraded:
                return reply(session, TurnStatus.fallback, self._say.simple("fallback"), intent=None)
            if self._replies is not None and self._settings.llm.answers_outside_catalog and not session.has_active_task:
                # seed 003 §28.3: outside the catalog but answerable (我好焦虑, a question): the cloud responder's words
                generated = await self._replies.social(text, ctx.deadline, notes=ctx.replies, on_delta=ctx.on_delta)
                if generated:
                    session.status = SessionStatus.social
                    return reply(session, TurnStatus.social, generated, intent=top)
            return reply(session, TurnStatus.rejected, self._say.simple("reject"), intent=top)
        # clarify, route_to_cloud with no cloud planner, and a weak-but-known reject: offer the candidates
        # (seed 003 §27.2)
        options = candidates[: self._settings.fusion.max_clarify_options]
        if options:
            return self._disambiguation.ask(session, text, options, intent=top)
        return reply(session, TurnStatus.fallback, self._say.simple("fallback"), intent=top)

    def _one_agent_request(self, text: str, route: Route) -> bool:
        """Several intents detected, no workflow planned, and the words ask for one of them only: fusion sure of one an
        agent carries and the words cue no second one (我想三个月内练出腹肌，每周能练三个小时: the hours are the goal's,
        no request of their own), the sure one read through `rules.cues_over` (明天看牙不去了 reads like feedback and
        cancels the item); or fusion unsure and the one intent cued is among those detected (昨天没弄完的帮我挪到后面去
        replans what was left, the 挪到 is its own), which the cue then settles."""
        cued = self._disambiguation.cued(text)
        if route.fusion.decision != RouteDecision.execute:
            return len(cued) == 1 and cued <= {c.intent for c in route.detected}
        if self._sole_cue(text, route) is not None:
            return True
        top = route.fusion.top
        routed = (self._disambiguation.over(text, top.intent) or top.intent) if top is not None else None
        intent = self._pack.intent(routed) if routed is not None else None
        return intent is not None and intent.agent is not None and len(cued - {intent.id}) == 0

    def _sole_cue(self, text: str, route: Route) -> str | None:
        """Several intents detected and fusion sure of one whose cue the words do not say, while they say one other's
        only, detected too: that one is the request and the rest its context (找个时间去换轮胎，胎压老是报警: the
        state read like a deletion, the request is a new item); None otherwise."""
        top = route.fusion.top
        if not route.multi_intent or top is None or route.fusion.decision != RouteDecision.execute:
            return None
        cued = self._disambiguation.cued(text)
        if len(cued) != 1 or top.intent in cued or not cued <= {c.intent for c in route.detected}:
            return None
        return next(iter(cued))

    def _workflow_response(self, session: SessionState, outcome: Outcome) -> ChatResponse:
        return workflow_response(session, outcome, self._pack, self._flows)

    def _multi_decision(self, session: SessionState, text: str, route: Route, ctx: TurnContext) -> ChatResponse:
        ids = [c.intent for c in route.detected]
        specs = [s for i in ids if (known := self._pack.intent(i)) for s in known.slots]
        params = self._task.extract(text, specs, ctx, free_text=False)
        session.reset_task()
        session.status = SessionStatus.decided
        intents = [intent for i in ids if (intent := self._pack.intent(i))]
        handed = decision(ids, params, None)
        top = route.fusion.top.intent if route.fusion.top else None
        said = self._say.decided(None, [i.label for i in intents], [i.agent for i in intents if i.agent])
        return reply(session, TurnStatus.decided, said, intent=top, decision=handed)

    async def _social_reply(
        self, session: SessionState, category: str, intent: str = SOCIAL, *, text: str, ctx: TurnContext
    ) -> ChatResponse:
        """The category's template; for chit-chat the generated reply (seed 003 §10.3) when one comes in time and
        passes the checks (engine/llm/replies.py)."""
        generated = None
        if self._replies is not None and category == "chitchat":
            generated = await self._replies.social(text, ctx.deadline, notes=ctx.replies, on_delta=ctx.on_delta)
        said = generated or self._say.social(category)
        if session.has_active_task:
            waiting = "确认" if session.status == SessionStatus.waiting_confirmation else "补充信息"
            said += self._say.pending_hint(self._pack.intent(session.current_intent or ""), waiting)
        else:
            session.status = SessionStatus.social
        response = reply(session, TurnStatus.social, said, intent=intent)
        response.routing_debug.replies = ctx.replies
        return response

    async def _profile(self, ctx: TurnContext) -> dict[str, Any] | None:
        """The user's profile for the planner's PROFILE.md, inside the store budget; None without a store or when the
        store is slow (the prompt then says there is none)."""
        if ctx.profile is None:
            return None
        try:
            async with ctx.deadline.phase("store", self._settings.budgets.stage_s("store")):
                return await ctx.profile() or None
        except StageTimeout:
            return None

    async def _history(self, ctx: TurnContext, session: SessionState) -> list[dict[str, str]]:
        """The conversation before this turn for the planner (compacted there when it passes its budget), read from
        the log inside the store budget; the session's last exchange without a store or when the store is slow."""
        if ctx.history is None:
            return session.recent_dialog()
        try:
            async with ctx.deadline.phase("store", self._settings.budgets.stage_s("store")):
                return await ctx.history()
        except StageTimeout:
            return session.recent_dialog()

    async def _recall(self, ctx: TurnContext, text: str) -> list[str]:
        """The user's earlier messages near this turn (its own vector: no encoder pass), inside the store budget;
        none when there is no memory, no vector, or the store is slow (memory helps, it never holds a turn up)."""
        if ctx.recall is None or ctx.vector is None:
            return []
        try:
            async with ctx.deadline.phase("store", self._settings.budgets.stage_s("store")):
                return await ctx.recall(ctx.vector, text)
        except StageTimeout:
            return []
