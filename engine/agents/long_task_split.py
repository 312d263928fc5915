"""long_task_split_agent: split a long goal into stages up to its deadline and the next two weeks' subtasks.

Besides `run`, the agent tells the dialogue what it needs: `questions` (one Chinese question per field),
`prefill` (the fields the request itself already says) and `parse_answer` (one answer read as one field's value).
"""

from __future__ import annotations

import math
import re
from datetime import date, datetime, timedelta
from typing import Any

from engine.agents.base import definition, failure, reply, unknown, zone
from engine.agents.goal_words import (
    MAX_WEEKLY_HOURS,
    MIN_WEEKLY_HOURS,
    RE_LEVEL,
    find_deadline,
    find_weekly_hours,
    goal_title,
    tidy,
)
from engine.agents.text import DEFAULT_WRITER_TIMEOUT_S, TextWriter, at_day_end, compose, date_label
from engine.errors import InvalidInput
from protocol.agents import (
    AgentFunctionDefinition,
    AgentName,
    AgentResponseEnvelope,
    GoalSplitCandidate,
    SubAgentInputBase,
)
from protocol.rest import LongGoalPayload
from protocol.write_payloads import GoalSplitPayload, SubtaskPayload

NAME: AgentName = "long_task_split_agent"
REQUIRED = ("goal_title", "deadline", "weekly_hours")
OPTIONAL = ("current_level",)
_NEAR_TERM_DAYS = 14
_STAGES = {
    1: (("冲刺完成", "集中时间完成最关键的部分，确保按时达成", 1.0),),
    3: (
        ("起步准备", "明确标准、准备资料，建立每周固定的投入节奏", 0.3),
        ("集中推进", "完成主要内容，每周检查一次进度", 0.45),
        ("冲刺收尾", "查漏补缺，做最终检验", 0.25),
    ),
    4: (
        ("打基础", "明确标准、准备资料，建立每周固定的投入节奏", 0.25),
        ("系统推进", "按计划完成主要内容，每周检查一次进度", 0.35),
        ("强化提升", "针对薄弱环节专项练习，做阶段性检验", 0.25),
        ("冲刺收尾", "查漏补缺，做最终检验", 0.15),
    ),
}
_FOUR_STAGES_FROM_DAYS = 42  # six weeks or more make room for a separate strengthening stage
_STEPS = (
    "梳理「{goal}」的具体要求并准备资料",
    "开始第一部分内容，记下卡住的地方",
    "整理笔记，标出难点",
    "针对难点专项练习",
    "做一次小检验，看看进展",
    "复盘两周进度，调整下一阶段计划",
)
_FOUR_STEPS = (0, 1, 3, 5)
_PROMPT = (
    "你是时间管理助手。请只根据 facts 写一段中文的长期目标阶段规划：按 stages 的顺序写出每个阶段的名称、"
    "起止日期和重点，不要增加 facts 之外的阶段、日期或数字。"
)

_DEFINITIONS = [
    definition(
        NAME,
        "split",
        "把长期目标拆成到截止日期的几个阶段，并给出近两周的子任务",
        required=list(REQUIRED),
        optional=list(OPTIONAL),
        needs_candidates=False,
    )
]


class LongTaskSplitAgent:
    name: AgentName = NAME
    questions: dict[str, str] = {
        "goal_title": "你想完成的长期目标是什么？",
        "deadline": "这个目标打算在什么时候之前完成？",
        "weekly_hours": "每周大概能投入多少小时？",
        "current_level": "你现在的基础怎么样？比如零基础、学过一点、有一定经验。",
    }

    def __init__(self, writer: TextWriter | None = None, *, timeout_s: float = DEFAULT_WRITER_TIMEOUT_S) -> None:
        self._writer = writer
        self._timeout_s = timeout_s

    def definitions(self) -> list[AgentFunctionDefinition]:
        return list(_DEFINITIONS)

    def prefill(self, raw_input: str, now: datetime) -> dict[str, Any]:
        """The fields the request itself says: goal_title, deadline (ISO date-time with offset), weekly_hours
        (only with a 每周/每天 word), current_level; fields it does not say are left out."""
        found: dict[str, Any] = {}
        rest = raw_input
        hours = find_weekly_hours(rest, bare=False)
        if hours:
            found["weekly_hours"] = tidy(hours[0])
            rest = rest.replace(hours[1], "，", 1)
        deadline = find_deadline(rest, now)
        if deadline:
            found["deadline"] = deadline[0].isoformat()
            rest = re.sub(re.escape(deadline[1]) + "(?:之前|以前|前)?", "", rest, count=1)  # 明天之前: both words
        level = RE_LEVEL.search(rest)
        if level:
            found["current_level"] = level.group(0)
            rest = rest.replace(level.group(0), "，", 1)
        if title := goal_title(rest):
            found["goal_title"] = title
        return found

    def parse_answer(self, field: str, text: str, now: datetime) -> Any | None:
        """`text` (the user's answer to `questions[field]`) as that field's value; None when it is not a valid
        answer (不知道 for a deadline, 很多 for hours, a blank text). An unknown field is an InvalidInput."""
        if field == "goal_title":  # an answer that only says a time or hours names no goal
            return self.prefill(text, now).get("goal_title")
        if field == "deadline":  # 每周五小时 is hours, not Friday
            hours = find_weekly_hours(text, bare=False)
            deadline = find_deadline(text.replace(hours[1], "，", 1) if hours else text, now)
            return deadline[0].isoformat() if deadline else None
        if field == "weekly_hours":
            hours = find_weekly_hours(text, bare=True)
            return tidy(hours[0]) if hours else None
        if field == "current_level":
            return text.strip() or None
        raise InvalidInput(f"{NAME} has no field {field!r}", field=field)

    def _fields(self, inp: SubAgentInputBase) -> dict[str, Any]:
        """prefill's fields overridden by parsed_params', each checked as parse_answer checks an answer; an invalid
        parsed value clears the field, so it is asked for again."""
        fields = self.prefill(inp.raw_input, inp.now)
        for name in (*REQUIRED, *OPTIONAL):
            value = inp.parsed_params.get(name)
            if name == "deadline" and isinstance(value, (str, datetime)):
                value = _deadline_value(value, inp.now)
            elif name == "weekly_hours" and isinstance(value, (int, float)) and not isinstance(value, bool):
                value = tidy(value) if MIN_WEEKLY_HOURS <= value <= MAX_WEEKLY_HOURS else None
            elif isinstance(value, str):
                value = self.parse_answer(name, value, inp.now)
            else:
                continue
            if value is None:
                fields.pop(name, None)
            else:
                fields[name] = value
        return fields

    async def run(self, function: str, inp: SubAgentInputBase) -> AgentResponseEnvelope:
        if function != "split":
            raise unknown(NAME, function)
        fields = self._fields(inp)
        missing = [name for name in REQUIRED if name not in fields]
        if missing:
            return failure(
                NAME,
                function,
                self.questions[missing[0]],
                missing_fields=missing,
                questions={name: self.questions[name] for name in missing},
            )
        tz = zone(inp)
        now, today, goal, level = inp.now, inp.now.date(), fields["goal_title"], fields.get("current_level")
        deadline, hours = datetime.fromisoformat(fields["deadline"]).astimezone(tz), fields["weekly_hours"]
        due = date_label(deadline.date(), today)
        stages = [
            (name, focus, date_label(a, today), date_label(b, today))
            for name, focus, a, b in _stages(today, deadline.date())
        ]
        subtasks = _subtasks(goal, hours, now, deadline, _stages(today, deadline.date()))
        template = (
            f"「{goal}」计划（{date_label(today, today)}–{due}，每周约 {hours} 小时）：\n"
            + "".join(f"{i}. {name}（{a}–{b}）：{focus}\n" for i, (name, focus, a, b) in enumerate(stages, 1))
            + f"近两周先完成 {len(subtasks)} 个子任务，每个阶段开始前再细化下一步。"
        )
        facts = {
            "goal": goal,
            "deadline": due,
            "weekly_hours": hours,
            "current_level": level,
            "stages": [{"name": name, "start": a, "end": b, "focus": focus} for name, focus, a, b in stages],
        }
        overview = await compose(
            self._writer, _PROMPT, facts=facts, template=template, timeout_s=self._timeout_s, max_chars=8000
        )
        summary = f"目标：{goal}；截止：{due}；每周可投入约 {hours} 小时；当前基础：{level or '未说明'}"
        payload = GoalSplitPayload(
            goal=LongGoalPayload(
                title=goal,
                description=inp.raw_input[:4000] or None,
                plan_overview=overview,
                start_at=now,
                deadline_at=deadline,
            ),
            subtasks=subtasks,
            task_profile_summary=summary,
        ).model_dump(mode="json", exclude_none=True)
        preview = (
            f"新建长期目标「{goal}」：分 {len(stages)} 个阶段，{due}前完成；先安排近两周的 {len(subtasks)} 个子任务"
        )
        candidate = GoalSplitCandidate(
            plan_overview=overview, task_profile_summary=summary, subtasks=payload["subtasks"]
        )
        action = {"action": "goal_split", "target_type": "long_goal", "payload": payload, "preview_text": preview}
        return reply(NAME, function, candidate.model_dump(mode="json"), db_action=action)


def _deadline_value(value: str | datetime, now: datetime) -> str | None:
    """A deadline given as a date-time (with offset, after `now`), as its ISO text, or as words."""
    if isinstance(value, str):
        text = value
        try:
            value = datetime.fromisoformat(text)
        except ValueError:
            found = find_deadline(text, now)
            return found[0].isoformat() if found else None
    return value.isoformat() if value.tzinfo is not None and value > now else None


def _stages(start: date, deadline: date) -> list[tuple[str, str, date, date]]:
    """(name, focus, first day, last day) of each stage: the days until the deadline split by the stage weights."""
    days = (deadline - start).days
    plan = _STAGES[1 if days < 3 else 3 if days < _FOUR_STAGES_FROM_DAYS else 4]
    bounds, share = [start], 0.0
    for _, _, weight in plan[:-1]:
        share += weight
        bounds.append(max(start + timedelta(days=round(days * share)), bounds[-1] + timedelta(days=1)))
    bounds.append(deadline + timedelta(days=1))
    return [(name, focus, bounds[i], bounds[i + 1] - timedelta(days=1)) for i, (name, focus, _) in enumerate(plan)]


def _subtasks(
    goal: str, hours: float, now: datetime, deadline: datetime, stages: list[tuple[str, str, date, date]]
) -> list[SubtaskPayload]:
    """Four or six sessions over the next two weeks (two a week, three above 4 hours a week), their minutes per
    7 days never above `hours`; each is due by the end of its day and never after the deadline."""
    per_week = min(3, max(2, math.ceil(hours / 2)))
    steps = range(6) if per_week == 3 else _FOUR_STEPS
    window = max(1, min(_NEAR_TERM_DAYS, (deadline.date() - now.date()).days))
    offsets = [1 + i * window // len(steps) for i in range(len(steps))]
    # a deadline inside the two weeks packs the sessions closer: size them by the busiest 7 days
    busiest = max(sum(1 for other in offsets if first <= other < first + 7) for first in offsets)
    minutes = int(hours * 60 / busiest) // 5 * 5
    subtasks = []
    for step, offset in zip(steps, offsets, strict=True):
        day = now.date() + timedelta(days=offset)
        stage = next((name for name, _, first, last in stages if first <= day <= last), stages[-1][0])
        subtasks.append(
            SubtaskPayload(
                title=_STEPS[step].format(goal=goal)[:200],
                description=f"约 {minutes} 分钟；属于「{stage}」阶段",
                due_at=min(at_day_end(day, now.tzinfo), deadline),
            )
        )
    return subtasks
