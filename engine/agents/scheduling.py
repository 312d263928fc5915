"""scheduling_agent: seed 000's Scheduling chain for a planning request (我想这周把论文初稿写完, 下周开始每天跑步).

It answers with the task level, the draft and the questions; a draft with slots is a proposal behind the write gate:
a plan (L1/L2) becomes a long goal with one subtask per slot, an action (L3) one schedule item carrying its start
instructions. Execution hands it the busy times of the request's window and the user's profile.
"""

from __future__ import annotations

from engine.agents.base import definition, reply, unknown, zone
from engine.scheduling import Interval, SchedulingChain, Signal
from engine.scheduling.texts import said
from engine.streaming import text_deltas
from protocol.agents import AgentFunctionDefinition, AgentName, AgentResponseEnvelope, SubAgentInputBase
from protocol.rest import LongGoalPayload, TaskItemPayload
from protocol.scheduling import SchedulingDraft
from protocol.write_payloads import GoalSplitPayload, SubtaskPayload

NAME: AgentName = "scheduling_agent"
SIGNAL_INTENT, SIGNAL_SCORE = "classifier_intent", "classifier_score"

_DEFINITIONS = [
    definition(
        NAME,
        "plan",
        "为想法、计划或第一步行动出草案：判断任务等级（L1 想法 / L2 方案 / L3 行动），在用户的空闲时间里给出候选时段，"
        "并追问缺少的信息",
        optional=[SIGNAL_INTENT, SIGNAL_SCORE],
        needs_candidates=False,
    )
]


class SchedulingAgent:
    name: AgentName = NAME

    def __init__(self, chain: SchedulingChain | None = None) -> None:
        self._chain = chain or SchedulingChain()

    @property
    def extra_s(self) -> float:
        """How much longer than a template agent a call may take: the time its texts' writer may wait on an LLM."""
        return self._chain.texts_budget_s

    def definitions(self) -> list[AgentFunctionDefinition]:
        return list(_DEFINITIONS)

    async def run(self, function: str, inp: SubAgentInputBase) -> AgentResponseEnvelope:
        if function != "plan":
            raise unknown(NAME, function)
        zone(inp)
        intent = inp.parsed_params.get(SIGNAL_INTENT)
        score = inp.parsed_params.get(SIGNAL_SCORE)
        signal = Signal(intent, float(score) if isinstance(score, int | float) else 0.0) if intent else None
        draft = await self._chain.run(
            inp.raw_input,
            now=inp.now,
            busy=[Interval(b.start_at, b.end_at) for b in inp.busy_times],
            profile=inp.user_profile,
            signal=signal,
            on_delta=text_deltas(),
        )
        text = _said(draft)
        result = {"reply": text, "scheduling": draft.model_dump(mode="json")}
        if not draft.slots:
            return reply(NAME, function, result)
        return reply(NAME, function, result, db_action=_write(draft, inp, text))


def _said(draft: SchedulingDraft) -> str:
    return said(draft.draft_text, draft.start_instructions, draft.questions, draft.next_steps_suggestion)


def _write(draft: SchedulingDraft, inp: SubAgentInputBase, said: str) -> dict[str, object]:
    """The write that saves the draft; its preview is the draft as said (the gate shows it for 确认)."""
    if draft.kind == "action":
        slot = draft.slots[0]
        item = TaskItemPayload(
            item_type="schedule",
            title=slot.title[:200],
            description=(draft.start_instructions or "")[:4000] or None,
            start_at=slot.start_at,
            end_at=slot.end_at,
        )
        return {
            "action": "create",
            "target_type": "task_item",
            "payload": item.model_dump(mode="json", exclude_none=True),
            "preview_text": said,
        }
    payload = GoalSplitPayload(
        goal=LongGoalPayload(
            title=draft.title[:200],
            description=inp.raw_input[:4000] or None,
            plan_overview=draft.draft_text[:8000],
            start_at=draft.slots[0].start_at,
            deadline_at=draft.slots[-1].end_at,
        ),
        subtasks=[SubtaskPayload(title=s.title[:200], start_at=s.start_at, end_at=s.end_at) for s in draft.slots],
        task_profile_summary=(
            f"任务等级：{draft.task_level}；待补充：{'、'.join(draft.missing) or '无'}；"
            f"工作时间 {draft.working_hours['start']}–{draft.working_hours['end']}（{draft.time_zone}）"
        ),
    )
    return {
        "action": "goal_split",
        "target_type": "long_goal",
        "payload": payload.model_dump(mode="json", exclude_none=True),
        "preview_text": said,
    }
