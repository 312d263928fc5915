"""The turn pipeline (seed 003 §8, §19, §22): chat and fill-slots over session, routing, slots, plugins and responses."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from datetime import datetime
from zoneinfo import ZoneInfo

from config.settings import Settings
from engine.clauses import ClauseSplitter
from engine.deadline import Deadline, StageTimeout
from engine.dialog_rules import DialogRules
from engine.errors import InvalidInput, SessionForbidden, TextTooLong
from engine.events import ClientGone, TurnListener
from engine.fusion import RouteDecision
from engine.keyword import KeywordMatcher
from engine.llm.planner import LlmWorkflowPlanner
from engine.llm.replies import ReplyWriter
from engine.media import MediaClient, MediaStage, check_modality
from engine.model_client import ModelClient
from engine.pack import OUT_OF_SCOPE, SOCIAL, SPECIAL_INTENTS, Pack
from engine.plugins import InMemoryWorlds, PluginRegistry, Worlds
from engine.polarity import Polarity
from engine.replies import decision, reply
from engine.responses import ResponsePolicy
from engine.rewrite import rewrite
from engine.router import Route, Router
from engine.session import SessionState, SessionStatus, SessionStore
from engine.slot_filling import SlotFiller
from engine.slots import SlotLimits
from engine.social import SocialRouter
from engine.task import SingleTask
from engine.turn_context import TurnContext, timings_of
from engine.workflow.planners import settle
from engine.workflow.replies import gone_response, leave_workflow, workflow_response
from engine.workflow.turns import Faults, Outcome, WorkflowTurns
from protocol.http_chat import ChatRequest, ChatResponse, FillSlotsRequest, RewriteDebug, RoutingDebug, TurnStatus


class TurnEngine:
    """Answers one chat or fill-slots request within the modality's latency budget.

    Construct once per process with a loaded pack, validated settings, a `ModelClient` (Ray handles or
    in-process models), a `SessionStore`, the plugin registry and where users' worlds live (`worlds`, in
    memory by default; the served app passes each turn's world itself); `clock` returns the current time in
    any zone (it is converted to the user's zone) and exists so relative dates are testable.
    """

    def __init__(
        self,
        *,
        pack: Pack,
        settings: Settings,
        models: ModelClient,
        sessions: SessionStore,
        plugins: PluginRegistry,
        worlds: Worlds | None = None,
        clock: Callable[[], datetime] | None = None,
        media: MediaClient | None = None,
        faults: Faults | None = None,
        llm_planner: LlmWorkflowPlanner | None = None,
        replies: ReplyWriter | None = None,
    ) -> None:
        self.pack = pack
        self.settings = settings
        self.media_client = media
        self._settings = settings
        self._sessions = sessions
        self.worlds = worlds or InMemoryWorlds()
        self._tz = ZoneInfo(settings.timezone)
        self._clock = clock or (lambda: datetime.now(self._tz))
        self._keywords = KeywordMatcher(pack)
        self.clauses = ClauseSplitter(settings.clauses)
        self._polarity = Polarity(pack.rules)
        self._router = Router(
            settings=settings, keywords=self._keywords, models=models, clauses=self.clauses, polarity=self._polarity
        )
        self._social = SocialRouter(pack.rules, self._keywords)
        self._rules = DialogRules(pack.rules)
        self._say = ResponsePolicy(pack)
        limits = SlotLimits(
            temperature_min=settings.slots.temperature_min, temperature_max=settings.slots.temperature_max
        )
        self._slots = SlotFiller(limits=limits, tz=self._tz, clock=self._clock)
        self._media = MediaStage(settings=settings, media=media)
        self._replies = replies if settings.llm.generate_replies else None
        self._task = SingleTask(
            pack=pack,
            settings=settings,
            plugins=plugins,
            rules=self._rules,
            say=self._say,
            slots=self._slots,
            replies=self._replies,
        )
        self._flows = WorkflowTurns(
            pack=pack,
            settings=settings,
            keywords=self._keywords,
            extract=self._slots.extract,
            invalid_slot=self._slots.invalid,
            faults=faults,
            llm=llm_planner,
        )

    # ---- entry points -------------------------------------------------------------------------

    def deadline(self, modality: str, *, arrived: float | None = None) -> Deadline:
        """The deadline of a `modality` turn from `arrived` (epoch seconds; default now), with the commit's
        budget held back from the model stages."""
        budgets = self._settings.budgets
        return Deadline(
            budgets.turn_ms[modality],
            reserve_ms=budgets.stages_ms["commit"],
            started=time.time() if arrived is None else arrived,
        )

    def admission_ms(self, modality: str) -> float:
        """How long a `modality` turn may take, queueing included, and still answer inside every budget."""
        return self._settings.budgets.admission_ms(modality)

    async def chat(
        self, request: ChatRequest, *, deadline: Deadline | None = None, listener: TurnListener | None = None
    ) -> ChatResponse:
        """Load the session, run the turn, save the session and the user's world (the in-process path)."""
        check_modality(request)  # before the session exists: bad input creates nothing
        ctx = TurnContext(deadline or self.deadline(request.modality), self.worlds.for_turn(request.user_id), listener)
        session = await self._session(request.session_id or uuid.uuid4().hex, request.user_id, create=True)
        assert session is not None  # create=True makes one
        response = await self.chat_on(session, request, ctx)
        return await self._save(session, response, ctx)

    async def fill_slots(self, request: FillSlotsRequest, *, deadline: Deadline | None = None) -> ChatResponse:
        ctx = TurnContext(deadline or self.deadline("text"), self.worlds.for_turn(request.user_id))
        session = await self._session(request.session_id, request.user_id, create=False)
        response = await self.fill_slots_on(session, request, ctx)
        return await self._save(session, response, ctx) if session is not None else response

    async def chat_on(self, session: SessionState, request: ChatRequest, ctx: TurnContext) -> ChatResponse:
        """Run a chat turn on `session`, mutating it in place; the caller persists it and the world in `ctx`.

        A voice or image turn first recognizes its media inside the same deadline (its modality's budget). The caller
        has checked the request's modality (`check_modality`) before it leased or wrote anything."""
        text = ""
        if request.modality == "text":
            assert request.text is not None  # check_modality: a text turn carries its text
            text = self._checked_text(request.text)
        recognition = await self._media.recognize(request, ctx.deadline) if request.modality != "text" else None
        if recognition is not None:
            text = self._checked_text(recognition.recognized_text)
        try:
            response = await self._chat_turn(session, text, ctx)
        except ClientGone:
            response = gone_response(session, self._say.simple("stopped"))
        if recognition is not None:
            response.recognized_text, response.recognition = recognition.recognized_text, recognition
        return self._finish(session, text, response, ctx)

    async def fill_slots_on(
        self, session: SessionState | None, request: FillSlotsRequest, ctx: TurnContext
    ) -> ChatResponse:
        """Continue `session`'s active task; None (an unknown id) or no active task answers fallback and changes nothing."""
        if request.text is None and request.slots is None:
            raise InvalidInput("Provide 'text' or 'slots'.", field="text")
        text = self._checked_text(request.text) if request.text is not None else ""
        if session is not None and self._flows.active(session):
            outcome = await self._flows.resume(session, text, request.slots, self._task.runner(ctx), ctx.step)
            return self._finish(
                session, text, self._workflow_response(session, outcome or self._flows.ask_again(session)), ctx
            )
        if session is None or not session.has_active_task:
            # nothing to continue (seed 003 §22.1); an unknown id does not create a session
            probe = session or SessionState(session_id=request.session_id, user_id=request.user_id)
            response = reply(probe, TurnStatus.fallback, self._say.simple("fallback"), intent=probe.current_intent)
            return self._finish(probe, text, response, ctx)
        response = await self._task.resume(session, text, request.slots, ctx)
        return self._finish(session, text, response, ctx)

    # ---- turn logic ---------------------------------------------------------------------------

    async def _chat_turn(self, session: SessionState, text: str, ctx: TurnContext) -> ChatResponse:
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
                    history=session.recent_dialog(),
                    memory=await self._recall(ctx, rewritten.text),
                )
            if plan.accepted and plan.workflow is not None:
                await ctx.ack(self._say.simple("ack"), plan.workflow)
                response = self._workflow_response(
                    session, await self._flows.start(session, plan.workflow, self._task.runner(ctx), ctx.step)
                )
                response.routing_debug, response.detected_intents, response.multi_intent = debug, route.detected, True
                return response
            route.fusion = settle(route.fusion, plan, rewritten.text, self._polarity)
            debug.fusion = route.fusion.debug()
        response = await self._decide(session, rewritten.text, route, ctx)
        response.routing_debug = debug
        response.detected_intents = route.detected
        response.multi_intent = route.multi_intent
        return response

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
        if route.multi_intent and fusion.decision != RouteDecision.reject:
            return self._multi_decision(session, text, route, ctx)
        if fusion.decision == RouteDecision.execute and top and top != OUT_OF_SCOPE:
            return await self._task.execute(session, self.pack.known_intent(top), text, ctx)
        weak = (
            fusion.decision == RouteDecision.reject
            and (fusion.top.score if fusion.top else 0.0) < self._settings.fusion.clarify_floor
        )
        if top == OUT_OF_SCOPE or weak or not fusion.ranked:
            if not fusion.ranked and ctx.deadline.degraded:
                return reply(session, TurnStatus.fallback, self._say.simple("fallback"), intent=None)
            return reply(session, TurnStatus.rejected, self._say.simple("reject"), intent=top)
        # clarify, route_to_cloud with no cloud planner, and a weak-but-known reject: offer the candidates (seed 003 §27.2)
        options = [c.intent for c in fusion.ranked if c.intent not in SPECIAL_INTENTS][
            : self._settings.fusion.max_clarify_options
        ]
        if options:
            return reply(session, TurnStatus.clarify, self._say.clarify(options), intent=top)
        return reply(session, TurnStatus.fallback, self._say.simple("fallback"), intent=top)

    def _workflow_response(self, session: SessionState, outcome: Outcome) -> ChatResponse:
        return workflow_response(session, outcome, self.pack, self._flows)

    def _multi_decision(self, session: SessionState, text: str, route: Route, ctx: TurnContext) -> ChatResponse:
        ids = [c.intent for c in route.detected]
        specs = [s for i in ids if (known := self.pack.intent(i)) for s in known.slots]
        params = self._task.extract(text, specs, ctx, free_text=False)
        session.reset_task()
        session.status = SessionStatus.decided
        intents = [intent for i in ids if (intent := self.pack.intent(i))]
        handed = decision(ids, params, None)
        top = route.fusion.top.intent if route.fusion.top else None
        said = self._say.decided(None, [i.label for i in intents], [i.agent for i in intents if i.agent])
        return reply(session, TurnStatus.decided, said, intent=top, decision=handed)

    async def _social_reply(
        self, session: SessionState, category: str, intent: str = SOCIAL, *, text: str, ctx: TurnContext
    ) -> ChatResponse:
        """The category's template; for chit-chat the generated reply (seed 003 §10.3) when one comes in time and
        passes the checks (engine/llm/replies.py)."""
        generated = await self._replies.social(text, ctx.deadline) if self._replies and category == "chitchat" else None
        said = generated or self._say.social(category)
        if session.has_active_task:
            waiting = "确认" if session.status == SessionStatus.waiting_confirmation else "补充信息"
            said += self._say.pending_hint(self.pack.intent(session.current_intent or ""), waiting)
        else:
            session.status = SessionStatus.social
        return reply(session, TurnStatus.social, said, intent=intent)

    # ---- helpers ------------------------------------------------------------------------------

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

    def _checked_text(self, text: str) -> str:
        if not text.strip():
            raise InvalidInput("Field 'text' must not be empty or whitespace.", field="text")
        if len(text) > self._settings.max_text_chars:
            raise TextTooLong(
                f"Field 'text' is {len(text)} characters; the limit is {self._settings.max_text_chars}.", field="text"
            )
        return text.strip()

    async def _session(self, session_id: str, user_id: str, *, create: bool) -> SessionState | None:
        state = await self._sessions.load(session_id)
        if state is not None and state.user_id != user_id:
            raise SessionForbidden(f"Session '{session_id}' belongs to another user.", field="session_id")
        if state is None and create:
            state = SessionState(session_id=session_id, user_id=user_id)
        return state

    def _finish(self, session: SessionState, text: str, response: ChatResponse, ctx: TurnContext) -> ChatResponse:
        session.last_user_text, session.last_agent_text = text, response.reply
        session.turns += 1
        response.timings = timings_of(ctx.deadline)
        return response

    async def _save(self, session: SessionState, response: ChatResponse, ctx: TurnContext) -> ChatResponse:
        with ctx.deadline.measure("commit"):
            await self._sessions.save(session)
            if ctx.world.changed and ctx.world.world is not None:
                await self.worlds.save(session.user_id, ctx.world.world)
        response.timings = timings_of(ctx.deadline)
        return response
