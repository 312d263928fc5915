"""Workflow turns: the planner stage inside the turn's deadline (engine.workflow.planning), starting a planned
workflow, and resuming a paused one from the next chat turn or /fill-slots (seed 003 §20–§22). The workflow lives in
the session row, so the resume may land on any orchestrator replica."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from config.settings import Settings
from engine.deadline import Deadline
from engine.dialog_rules import DialogRules
from engine.keyword import KeywordMatcher
from engine.llm.planner import LlmWorkflowPlanner
from engine.pack import Intent, Pack, SlotSpec
from engine.responses import ResponsePolicy, render
from engine.router import Route
from engine.session import SessionState, SessionStatus
from engine.slot_filling import SlotFiller
from engine.workflow.escalation import LlmEscalation
from engine.workflow.executor import FINISHED, OnStep, Pause, RunPlugin, WorkflowExecutor
from engine.workflow.planners import Extract, Plan
from engine.workflow.planning import Faults, PlannerStage
from engine.workflow.wording import WorkflowWording
from protocol.http_chat import TurnStatus
from protocol.turn_debug import PlannerDebug
from protocol.workflow import StepStatus, Workflow, WorkflowStatus, WorkflowStep


@dataclass
class Outcome:
    """A workflow turn's answer: what the engine turns into the response and the session."""

    status: TurnStatus
    reply: str
    workflow: Workflow
    intent: str | None
    pending_slots: list[str]


class WorkflowTurns:
    def __init__(
        self,
        *,
        pack: Pack,
        settings: Settings,
        keywords: KeywordMatcher,
        extract: Extract,
        invalid_slot: Callable[[Intent, dict[str, Any]], SlotSpec | None],
        faults: Faults | None = None,
        llm: LlmWorkflowPlanner | Sequence[LlmWorkflowPlanner] | None = None,
    ) -> None:
        self._pack = pack
        self._extract = extract
        self._planning = PlannerStage(pack=pack, settings=settings, keywords=keywords, extract=extract, faults=faults)
        self._say = ResponsePolicy(pack)
        self.wording = WorkflowWording(pack, self._say)
        self._executor = WorkflowExecutor(
            pack,
            invalid_slot=invalid_slot,
            skip_reason=self.wording.skip_reason,
            own_words=lambda intent, slots: render(intent.reply, **slots),
        )
        self._rules = DialogRules(pack.rules)
        self.escalation = (
            LlmEscalation(llm, pack=pack, settings=settings, extract=extract)
            if llm and settings.llm.enabled  # a planner, or a non-empty list of them
            else None
        )

    async def plan(self, text: str, route: Route, deadline: Deadline) -> tuple[Plan, PlannerDebug] | None:
        """The planner stage (engine.workflow.planning): None when the trigger does not call for it."""
        return await self._planning.plan(text, route, deadline)

    # ---- running ------------------------------------------------------------------------------

    async def start(
        self, session: SessionState, workflow: Workflow, run: RunPlugin, on_step: OnStep | None = None
    ) -> Outcome:
        session.reset_task()
        session.workflow = workflow
        return await self._advance(session, workflow, run, on_step=on_step)

    def active(self, session: SessionState) -> bool:
        wf = session.workflow
        return wf is not None and wf.status in (WorkflowStatus.waiting_slot, WorkflowStatus.waiting_confirmation)

    def waiting_slot(self, session: SessionState) -> bool:
        return session.workflow is not None and session.workflow.status == WorkflowStatus.waiting_slot

    async def resume(
        self,
        session: SessionState,
        text: str,
        slots: dict[str, Any] | None,
        run: RunPlugin,
        on_step: OnStep | None = None,
        *,
        free_text: bool = True,
    ) -> Outcome | None:
        """Continue the paused workflow with this answer; None when the text is not an answer to it (the caller
        abandons the workflow and routes the text as a new turn, or asks again)."""
        wf = session.workflow
        assert wf is not None
        step = self._executor.paused_step(wf)
        if step is None:
            return None
        if wf.status == WorkflowStatus.waiting_confirmation and slots is None:
            answer = self._rules.confirmation(text)
            if answer is None and self._rules.is_stop(text):
                return self._stop(session, wf)
            if answer is None:
                label = render(self._pack.known_intent(step.intent_id).label, **step.slots)
                return self._outcome(
                    session, wf, TurnStatus.waiting_confirmation, self._say.simple("confirm_retry", label=label), step
                )
            if answer:
                return await self._advance(session, wf, run, confirmed=step.step_id, on_step=on_step)
            self._executor.skip(step, "declined")
            if on_step is not None:
                await on_step(step)
            return await self._advance(session, wf, run, on_step=on_step, declined=step)
        if text and self._rules.is_stop(text):
            return self._stop(session, wf)
        intent = self._pack.known_intent(step.intent_id)
        pending = [s for s in intent.slots if s.required and s.name not in step.slots]
        # slots sent by name must be the step's (422 naming the first that is not); words fill what they say
        filled = SlotFiller.known(intent, slots) if slots is not None else self._extract(text, pending, free_text)
        if not filled:
            if slots is not None:
                return self._outcome(session, wf, TurnStatus.waiting_slot, self._say.ask_slot(pending[0]), step)
            return None
        step.slots.update(filled)
        step.status = StepStatus.pending
        return await self._advance(session, wf, run, on_step=on_step)

    async def _advance(
        self,
        session: SessionState,
        wf: Workflow,
        run: RunPlugin,
        *,
        confirmed: str | None = None,
        on_step: OnStep | None = None,
        declined: WorkflowStep | None = None,
    ) -> Outcome:
        """Run on from where the workflow stands; the reply says what finished in this turn (and the step the
        driver just declined)."""
        before = {s.step_id for s in wf.steps if s.status in FINISHED and s is not declined}
        try:
            pause = await self._executor.advance(wf, run, confirmed=confirmed, on_step=on_step)
        except BaseException:
            wf.status = WorkflowStatus.stopped  # the client went away: what ran stays run, nothing more runs
            session.status, session.current_intent, session.pending_slots = SessionStatus.stopped, None, []
            raise
        ran_now = [s for s in wf.steps if s.step_id not in before]
        if pause is not None:
            return self._paused(session, wf, pause, ran_now)
        return self._finished(session, wf, ran_now)

    def _paused(self, session: SessionState, wf: Workflow, pause: Pause, ran_now: list[WorkflowStep]) -> Outcome:
        said = self.wording.report(ran_now)
        if pause.kind == "ask_slot":
            assert pause.slot is not None
            return self._outcome(
                session, wf, TurnStatus.waiting_slot, said + self._say.ask_slot(pause.slot), pause.step
            )
        intent = self._pack.known_intent(pause.step.intent_id)
        return self._outcome(
            session, wf, TurnStatus.waiting_confirmation, said + self._say.confirm(intent, pause.step.slots), pause.step
        )

    def _finished(self, session: SessionState, wf: Workflow, ran_now: list[WorkflowStep]) -> Outcome:
        agent_steps = [s for s in wf.steps if s.status == StepStatus.pending]
        wf.summary = self.wording.report(ran_now, summary=True)
        if agent_steps:  # decisions for their agents (seed 002's agents act on them), said after what was done
            wf.summary += self._say.decided(
                None, [self.wording.label(s) for s in agent_steps], [s.agent for s in agent_steps if s.agent]
            )
        status = TurnStatus.decided if agent_steps else TurnStatus.completed
        session.status = SessionStatus.decided if agent_steps else SessionStatus.completed
        session.current_intent, session.pending_slots = None, []
        for step in wf.steps:
            self._remember(session, step)
        return Outcome(status, wf.summary, wf, wf.steps[-1].intent_id if wf.steps else None, [])

    def _stop(self, session: SessionState, wf: Workflow) -> Outcome:
        wf.status = WorkflowStatus.stopped
        for step in wf.steps:
            if step.status in (StepStatus.waiting_slot, StepStatus.waiting_confirmation):
                step.status = StepStatus.pending
        session.status, session.current_intent, session.pending_slots = SessionStatus.stopped, None, []
        return Outcome(TurnStatus.stopped, self._say.simple("workflow_stopped"), wf, None, [])

    def _outcome(
        self, session: SessionState, wf: Workflow, status: TurnStatus, reply: str, step: WorkflowStep
    ) -> Outcome:
        waiting = status == TurnStatus.waiting_confirmation
        session.status = SessionStatus.waiting_confirmation if waiting else SessionStatus.waiting_slot
        session.current_intent = step.intent_id
        if waiting:
            session.pending_slots = ["confirmation"]
        else:
            intent = self._pack.known_intent(step.intent_id)
            session.pending_slots = [s.name for s in intent.slots if s.required and s.name not in step.slots]
        return Outcome(status, reply, wf, step.intent_id, list(session.pending_slots))

    def ask_again(self, session: SessionState) -> Outcome:
        """The paused step's question once more (a /fill-slots answer that filled nothing)."""
        wf = session.workflow
        assert wf is not None
        step = self._executor.paused_step(wf)
        assert step is not None
        intent = self._pack.known_intent(step.intent_id)
        if wf.status == WorkflowStatus.waiting_confirmation:
            return self._outcome(
                session, wf, TurnStatus.waiting_confirmation, self._say.confirm(intent, step.slots), step
            )
        pending = [s for s in intent.slots if s.required and s.name not in step.slots]
        return self._outcome(session, wf, TurnStatus.waiting_slot, self._say.ask_slot(pending[0]), step)

    @staticmethod
    def _remember(session: SessionState, step: WorkflowStep) -> None:
        if step.status != StepStatus.done:
            return
        for slot, key in (("temperature", "last_temperature"), ("destination", "last_destination")):
            if slot in step.slots:
                session.memory[key] = step.slots[slot]
