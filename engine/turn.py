"""The turn pipeline (seed 003 §8, §19, §22): chat and fill-slots over session, routing, slots, plugins and
responses; the chat turn's own logic is engine.chat_turn."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from datetime import datetime
from zoneinfo import ZoneInfo

from config.settings import Settings
from engine.chat_turn import ChatTurn
from engine.clauses import ClauseSplitter
from engine.deadline import Deadline
from engine.dialog_rules import DialogRules
from engine.disambiguation import Disambiguation
from engine.errors import InvalidInput, SessionForbidden, TextTooLong
from engine.events import ClientGone, TurnListener
from engine.keyword import KeywordMatcher
from engine.llm.planner import LlmWorkflowPlanner
from engine.llm.replies import Replies
from engine.media import MediaClient, MediaStage, check_modality
from engine.model_client import ModelClient
from engine.pack import Pack
from engine.partial import PartialRequests
from engine.plugins import InMemoryWorlds, PluginRegistry, Worlds
from engine.polarity import Polarity
from engine.replies import reply
from engine.responses import ResponsePolicy
from engine.router import Router
from engine.session import SessionState, SessionStore
from engine.slot_filling import SlotFiller
from engine.slots import SlotLimits
from engine.social import SocialRouter
from engine.task import SingleTask
from engine.turn_context import TurnContext, timings_of
from engine.workflow.planning import Faults
from engine.workflow.replies import gone_response, workflow_response
from engine.workflow.turns import WorkflowTurns
from protocol.http_chat import ChatRequest, ChatResponse, FillSlotsRequest, TurnStatus

# turns that run no module: nothing understood, refused, a question back, small talk, stopped
_NO_PIPELINE = frozenset(
    {TurnStatus.fallback, TurnStatus.rejected, TurnStatus.clarify, TurnStatus.social, TurnStatus.stopped}
)


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
        llm_planner: LlmWorkflowPlanner | Sequence[LlmWorkflowPlanner] | None = None,
        replies: Replies | None = None,
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
        self._replies = replies if settings.llm.writes_replies else None
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
        self.partial = PartialRequests(
            pack=pack, cfg=settings.partial, model_accept=settings.planner.model_accept, keywords=self._keywords
        )
        self._turn = ChatTurn(
            pack=pack,
            settings=settings,
            rules=self._rules,
            social=self._social,
            router=self._router,
            polarity=self._polarity,
            say=self._say,
            task=self._task,
            flows=self._flows,
            replies=self._replies,
            clock=self._clock,
            disambiguation=Disambiguation(
                pack=pack, router=self._router, task=self._task, rules=self._rules, say=self._say
            ),
            partial=self.partial,
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
            response = self.partial.tell(await self._turn.run(session, text, ctx), ctx.not_done)
        except ClientGone:
            response = gone_response(session, self._say.simple("stopped"))
        if recognition is not None:
            response.recognized_text, response.recognition = recognition.recognized_text, recognition
        return self._finish(session, text, response, ctx)

    async def fill_slots_on(
        self, session: SessionState | None, request: FillSlotsRequest, ctx: TurnContext
    ) -> ChatResponse:
        """Continue `session`'s active task; None (an unknown id) or no active task answers fallback and changes
        nothing."""
        if request.text is None and request.slots is None:
            raise InvalidInput("Provide 'text' or 'slots'.", field="text")
        text = self._checked_text(request.text) if request.text is not None else ""
        if session is not None and session.asked is not None and not self._flows.active(session):
            response = await self._turn.answer(session, text, request.slots, ctx)
            return self._finish(session, text, response, ctx)
        if session is not None and self._flows.active(session):
            outcome = await self._flows.resume(session, text, request.slots, self._task.runner(ctx), ctx.step)
            response = workflow_response(session, outcome or self._flows.ask_again(session), self.pack, self._flows)
            return self._finish(session, text, response, ctx)
        if session is None or not session.has_active_task:
            # nothing to continue (seed 003 §22.1); an unknown id does not create a session
            probe = session or SessionState(session_id=request.session_id, user_id=request.user_id)
            response = reply(probe, TurnStatus.fallback, self._say.simple("fallback"), intent=probe.current_intent)
            return self._finish(probe, text, response, ctx)
        response = await self._task.resume(session, text, request.slots, ctx)
        return self._finish(session, text, response, ctx)

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
        if not response.pipeline and response.intent and response.status not in _NO_PIPELINE:
            # seed 000's Router names a pipeline for a single-intent turn too: the intent's module
            response.pipeline, response.pipeline_description = self._flows.wording.single(
                response.intent, response.slots
            )
        response.timings = timings_of(ctx.deadline)
        return response

    async def _save(self, session: SessionState, response: ChatResponse, ctx: TurnContext) -> ChatResponse:
        with ctx.deadline.measure("commit"):
            await self._sessions.save(session)
            if ctx.world.changed and ctx.world.world is not None:
                await self.worlds.save(session.user_id, ctx.world.world)
        response.timings = timings_of(ctx.deadline)
        return response
