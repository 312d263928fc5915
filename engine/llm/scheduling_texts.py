"""Seed 000's Scheduling chain written by an LLM: SchedulingRouter → DraftPlan (L1/L2) | DraftAction (L3) →
AskQuestion (when something is missing), over one `InteractionContext` that carries each module's output to the
next, as seed 000 runs them — with the chain's facts fixed before any program runs.

The level, the candidate slots, the minutes and what is missing are computed by `engine.scheduling` from rules and
the user's free time; the programs only write the texts about them. So the router's level is constrained to the
chain's own, AskQuestion runs only when the chain found something missing, and each text is used only when it comes
in time and passes the checks a user must be able to trust (engine/llm/replies.py): no claimed action, no number the
facts do not hold, short enough to read. A text that does not pass is the template's, and what the user must see to
confirm (each slot's time, how to confirm) is always said: a draft that leaves a slot out gets the slot list after it,
and the next step is always the template's.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from engine.deadline import Deadline, phase_time_left
from engine.llm.lm import PRIORITY_INTERACTIVE
from engine.llm.programs import InteractionContext, Program, closed
from engine.llm.replies import checked_reply, numbers_from
from engine.scheduling.texts import (
    LEVEL_NAMES,
    DraftFacts,
    DraftTexts,
    SchedulingTexts,
    TemplateTexts,
    slot_label,
)
from engine.streaming import OnDelta

if TYPE_CHECKING:
    import dspy

STAGE = "agent"
# the writer keeps this share of what its phase has left: the template and the message's later steps need the rest
SHARE_OF_PHASE = 0.8
MAX_CHARS = 300
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
_QUESTION_END = re.compile(r"(?<=[？?])")


def known_facts(facts: DraftFacts) -> dict[str, Any]:
    """What the programs are told, and all a text may state: the level, each slot as the user reads it, the minutes,
    the window, the working hours and what is missing."""
    start, end = (moment.astimezone(facts.now.tzinfo) for moment in (facts.window.start, facts.window.end))
    return {
        "title": facts.title,
        "task_level": f"{facts.level} {LEVEL_NAMES[facts.level]}",
        "candidate_slots": [slot_label(s, facts.now) for s in facts.slots],
        "minutes_each": facts.minutes,
        "window": f"{start:%Y-%m-%d %H:%M} – {end:%Y-%m-%d %H:%M}",
        "working_hours": facts.working_hours,
        "missing": list(facts.missing),
        "notes": list(facts.notes),
        "now": facts.now.strftime("%Y-%m-%d %H:%M"),
    }


class ProgramTexts:
    """`SchedulingTexts` over seed 000's DSPy programs on `lm` (a `dspy.LM` over the first `llm.use.programs`
    backend), each call inside what is left of `budget_s` (and of the agent's phase); `backend` names it in the
    draft's `texts_by`."""

    def __init__(
        self,
        lm: dspy.LM,
        *,
        backend: str,
        budget_s: float,
        fallback: SchedulingTexts | None = None,
        max_chars: int = MAX_CHARS,
    ) -> None:
        self._lm, self._backend, self._budget_s, self._max_chars = lm, backend, budget_s, max_chars
        self._fallback = fallback or TemplateTexts()
        self._plan, self._action, self._ask = Program("DraftPlan"), Program("DraftAction"), Program("AskQuestion")
        # the router's level is the chain's: its output is the rephrasing the next module reads
        self._route = {
            level: Program("SchedulingRouter", {"task_level": closed([level])}) for level in ("L1", "L2", "L3")
        }

    async def write(self, facts: DraftFacts, *, on_delta: OnDelta | None = None) -> DraftTexts:
        template = await self._fallback.write(facts)
        budget_s = self._budget_s
        left = phase_time_left()
        if left is not None:
            budget_s = min(budget_s, left * SHARE_OF_PHASE)
        if budget_s <= 0.05:
            return template
        deadline = Deadline(budget_s * 1000.0)
        known = known_facts(facts)
        allowed = numbers_from(known)
        pipeline = ["SchedulingRouter", "DraftAction" if facts.level == "L3" else "DraftPlan"]
        ctx = InteractionContext(
            user_input=facts.text,
            pipeline=pipeline + (["AskQuestion"] if facts.missing else []),
            task_level=facts.level,
            time_interval_data=json.dumps(known, ensure_ascii=False),
        )

        async def run(program: Program, **inputs: Any) -> dict[str, Any] | None:
            return await program.run(
                self._lm, deadline=deadline, stage=STAGE, budget_s=budget_s, priority=PRIORITY_INTERACTIVE, **inputs
            )

        routed = await run(self._route[facts.level], interaction_context=ctx)
        ctx = ctx.model_copy(update={"current_pipeline_index": 1, "previous_signature_output": routed or {}})
        drafted = await run(self._action if facts.level == "L3" else self._plan, interaction_context=ctx)
        stream = _Stream(on_delta)
        said_draft = (drafted or {}).get("action_description" if facts.level == "L3" else "draft_plan")
        draft_text = await stream.say(_with_every_slot(self._checked(said_draft, allowed), facts), template.draft_text)
        start = template.start_instructions
        if facts.level == "L3":
            start = await stream.say(self._checked((drafted or {}).get("start_instructions"), allowed), start)
        questions = template.questions
        if facts.missing:
            ctx = ctx.model_copy(update={"current_pipeline_index": 2, "previous_signature_output": drafted or {}})
            asked = await run(
                self._ask, constraints_and_missing_info_from_draft="、".join(facts.missing), interaction_context=ctx
            )
            generated = self._checked((asked or {}).get("questions"), allowed)
            said = await stream.say(generated, "\n".join(questions))
            questions = [q.strip() for q in _QUESTION_END.split(said) if q.strip()] if generated else questions
        return DraftTexts(  # how to confirm (the next step) is the gate's, never generated
            draft_text,
            start,
            questions,
            template.next_steps_suggestion,
            written_by=self._backend if stream.generated else "template",
        )

    def _checked(self, text: Any, allowed: set[str]) -> str | None:
        if not isinstance(text, str):
            return None
        checked = checked_reply(text, max_chars=self._max_chars)
        if checked is None or not set(_NUMBER.findall(checked)) <= allowed:
            return None
        return checked


def _with_every_slot(text: str | None, facts: DraftFacts) -> str | None:
    """The checked draft with the candidate slots said after it, unless it names each of them as the user reads it."""
    labels = [slot_label(s, facts.now) for s in facts.slots]
    if text is not None and labels and not all(label in text for label in labels):
        text = f"{text}\n候选时段：{'；'.join(labels)}。"
    return text


class _Stream:
    """The texts in the order they are said: each generated one goes to `on_delta` as it is decided, until the first
    that is the template's (after it nothing more streams, so the deltas joined always start the reply)."""

    def __init__(self, on_delta: OnDelta | None) -> None:
        self._on_delta, self._open, self._said_any = on_delta, True, False
        self.generated = False

    async def say(self, generated: str | None, template: str | None) -> str:
        if generated is None:
            self._open = False
            if template:
                self._said_any = True
            return template or ""
        self.generated = True
        if self._open and self._on_delta is not None:
            await self._on_delta(("\n" if self._said_any else "") + generated)
        self._said_any = True
        return generated
