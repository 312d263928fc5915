"""One intent's task (seed 003 §19, §21, §22): its slots, its confirmation, then its plugin — or a decision for its
agent. The turn engine starts it, or resumes it with a stop, a confirmation answer or slot values."""

from __future__ import annotations

from typing import Any

from config.settings import Settings
from engine.deadline import StageTimeout
from engine.dialog_rules import DialogRules
from engine.errors import Overloaded
from engine.llm.replies import Replies
from engine.pack import Intent, Pack, SlotSpec
from engine.plugins import PluginRegistry, PluginResult
from engine.replies import decision, reply
from engine.responses import ResponsePolicy
from engine.session import SessionState, SessionStatus
from engine.slot_filling import SlotFiller
from engine.turn_context import TurnContext
from engine.workflow.executor import RunPlugin
from protocol.http_chat import ChatResponse, TurnStatus
from protocol.workflow import StepStatus, WorkflowStep


class SingleTask:
    def __init__(
        self,
        *,
        pack: Pack,
        settings: Settings,
        plugins: PluginRegistry,
        rules: DialogRules,
        say: ResponsePolicy,
        slots: SlotFiller,
        replies: Replies | None = None,
    ) -> None:
        self._pack = pack
        self._settings = settings
        self._plugins = plugins
        self._rules = rules
        self._say = say
        self._slots = slots
        self._replies = replies

    async def execute(self, session: SessionState, intent: Intent, text: str, ctx: TurnContext) -> ChatResponse:
        if intent.id != session.current_intent or not session.has_active_task:
            session.reset_task()  # a new command starts from its own words, not the last task's slots
        session.current_intent = intent.id
        session.slots.update(self.extract(text, intent.slots, ctx, free_text=False))
        return await self._advance(session, intent, ctx, text=text)

    async def resume(
        self, session: SessionState, text: str, slots: dict[str, Any] | None, ctx: TurnContext
    ) -> ChatResponse:
        """Resume the session's active task with a stop, a confirmation answer, or slot values."""
        intent = self._pack.intent(session.current_intent or "")
        if intent is None:
            return reply(session, TurnStatus.fallback, self._say.simple("fallback"), intent=None)
        if session.status == SessionStatus.waiting_confirmation and slots is None:
            return await self._confirmation(session, intent, text, ctx)
        if text and self._rules.is_stop(text):
            session.reset_task()
            session.status = SessionStatus.stopped
            return reply(session, TurnStatus.stopped, self._say.simple("stopped"), intent=intent.id)
        if slots is None:
            slots = self.extract(text, self.pending_specs(session), ctx, free_text=True)
        session.slots.update(self._slots.known(intent, slots))
        return await self._advance(session, intent, ctx)

    async def _advance(
        self, session: SessionState, intent: Intent, ctx: TurnContext, *, text: str = ""
    ) -> ChatResponse:
        invalid = self._slots.invalid(intent, session.slots)
        if invalid:
            session.slots.pop(invalid.name, None)
        missing = [s for s in intent.slots if s.required and s.name not in session.slots]
        session.pending_slots = [s.name for s in missing]
        if missing:
            session.status = SessionStatus.waiting_slot
            return reply(session, TurnStatus.waiting_slot, self._say.ask_slot(missing[0]), intent=intent.id)
        if intent.plugin is None:
            session.status = SessionStatus.decided
            handed = decision([intent.id], session.slots, intent)
            return reply(
                session,
                TurnStatus.decided,
                await self._decided_words(intent, text, ctx),
                intent=intent.id,
                decision=handed,
            )
        if intent.confirm:
            session.status = SessionStatus.waiting_confirmation
            return reply(
                session, TurnStatus.waiting_confirmation, self._say.confirm(intent, session.slots), intent=intent.id
            )
        return await self._run_plugin(session, intent, ctx)

    async def _confirmation(self, session: SessionState, intent: Intent, text: str, ctx: TurnContext) -> ChatResponse:
        answer = self._rules.confirmation(text)
        if answer is None:
            return reply(
                session, TurnStatus.waiting_confirmation, self._say.confirm(intent, session.slots), intent=intent.id
            )
        if answer:
            return await self._run_plugin(session, intent, ctx)
        session.reset_task()
        session.status = SessionStatus.stopped
        return reply(
            session, TurnStatus.stopped, self._say.simple("confirm_cancelled", label=intent.label), intent=intent.id
        )

    async def _decided_words(self, intent: Intent, text: str, ctx: TurnContext) -> str:
        """The decision's words; for seed 000's EmotionSupport module, the generated reply when it comes in time and
        passes the checks (engine/llm/replies.py)."""
        if self._replies is not None and text and self._pack.workflows.modules.get(intent.id) == "EmotionSupport":
            generated = await self._replies.emotion(text, ctx.deadline, notes=ctx.replies, on_delta=ctx.on_delta)
            if generated:
                return generated
        return self._say.decided(intent)

    def runner(self, ctx: TurnContext) -> RunPlugin:
        async def run(intent: Intent, slots: dict[str, Any]) -> PluginResult:
            return await self._execute_plugin(intent, slots, ctx)

        return run

    async def _execute_plugin(self, intent: Intent, slots: dict[str, Any], ctx: TurnContext) -> PluginResult:
        ctx.before_plugin()
        if ctx.world.world is None and not ctx.world.at_hand:
            try:  # a quick read; it may use the commit's reserve rather than fail a turn whose models ran late
                async with ctx.deadline.phase("store", self._settings.budgets.stage_s("store"), final=True):
                    await ctx.world.get()
            except StageTimeout as exc:
                raise Overloaded("The turn's budget ran out before its plugin could run; nothing ran, retry.") from exc
        with ctx.deadline.measure("execute"):
            result = self._plugins.execute(intent.plugin or "", world=await ctx.world.get(), slots=slots)
        ctx.world.changed = ctx.world.changed or result.changed
        return result

    async def _run_plugin(self, session: SessionState, intent: Intent, ctx: TurnContext) -> ChatResponse:
        await ctx.ack(self._say.simple("ack"))
        result = await self._execute_plugin(intent, session.slots, ctx)
        slots = dict(session.slots)
        self._remember(session, slots)
        session.status = SessionStatus.completed
        session.pending_slots = []
        response = reply(session, TurnStatus.completed, self._say.done(intent, slots, result), intent=intent.id)
        response.slots = slots
        response.result = {
            "success": result.success,
            "message": result.message,
            "data": result.data,
            "plugin": intent.plugin,
        }
        await ctx.step(
            WorkflowStep(
                step=1,
                step_id="s1",
                intent_id=intent.id,
                plugin_id=intent.plugin,
                action=intent.action,
                status=StepStatus.done if result.success else StepStatus.failed,
                slots=slots,
                result={"success": result.success, "message": result.message, "data": result.data},
            )
        )
        return response

    def extract(self, text: str, specs: list[SlotSpec], ctx: TurnContext, *, free_text: bool) -> dict[str, Any]:
        with ctx.deadline.measure("slots"):
            return self._slots.extract(text, specs, free_text)

    def pending_specs(self, session: SessionState) -> list[SlotSpec]:
        intent = self._pack.intent(session.current_intent or "")
        return [s for s in intent.slots if s.name in session.pending_slots] if intent else []

    @staticmethod
    def _remember(session: SessionState, slots: dict[str, Any]) -> None:
        if "temperature" in slots:
            session.memory["last_temperature"] = slots["temperature"]
        if "destination" in slots:
            session.memory["last_destination"] = slots["destination"]
