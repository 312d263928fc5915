"""long_task_split_agent: split a long goal into stages up to its deadline and the next two weeks' subtasks.

Besides `run`, the agent tells the dialogue what it needs: `questions` (one Chinese question per field),
`prefill` (the fields the request itself already says) and `parse_answer` (one answer read as one field's value).
"""
from __future__ import annotations

import calendar
import math
import re
from datetime import date, datetime, timedelta
from typing import Any

from engine.agents.base import definition, failure, reply, unknown, zone
from engine.agents.text import DEFAULT_WRITER_TIMEOUT_S, TextWriter, at_day_end, compose, date_label
from engine.errors import InvalidInput
from engine.slots import extract_datetime, parse_chinese_number
from protocol.agents import AgentFunctionDefinition, AgentResponseEnvelope, GoalSplitCandidate, SubAgentInputBase
from protocol.rest import LongGoalPayload
from protocol.write_payloads import GoalSplitPayload, SubtaskPayload

NAME = "long_task_split_agent"
REQUIRED = ("goal_title", "deadline", "weekly_hours")
OPTIONAL = ("current_level",)
_NEAR_TERM_DAYS = 14
_MIN_WEEKLY_HOURS = 0.5  # two sessions of a quarter hour a week
_MAX_WEEKLY_HOURS = 7 * 24
_NUM = r"\d+(?:\.\d+)?|[零〇一二两三四五六七八九十百]+"
_SMALL = r"(?<![\d零一二两三四五六七八九十])(?:\d{1,2}|[一二两三四五六七八九十]+|半)"
_RE_SPAN = re.compile(rf"(?P<n>{_SMALL})(?P<unit>个月|个星期|个礼拜|年(?![\d一二三四五六七八九十底末初])|周|天"
                      r"|月(?=内|以内|之内|后|以后|之后))(?:内|以内|之内|后|以后|之后)?")
_RE_MONTH = re.compile(rf"(?P<y>明年|今年|后年|\d{{4}}年)?(?P<m>\d{{1,2}}|[一二三四五六七八九十]+)月份?"
                       rf"(?:(?P<d>{_NUM})[日号])?(?P<edge>底|末|初|中)?(?P<before>之前|以前|前)?")
_RE_YEAR_END = re.compile(r"(?P<y>明年|今年|后年)?(?:年底|年末|年终)(?:之前|以前|前)?")
_YEARS = {"今年": 0, "明年": 1, "后年": 2}
_RE_HOURS = re.compile(rf"(?P<per>工作日每天|每个星期|每个礼拜|每星期|每礼拜|每周|一周|每天|一天|每日|每晚|天天)?"
                       rf"[^\d零一二两三四五六七八九十半，,。；;]{{0,4}}?(?P<n>{_NUM})?个?(?P<half>半)?个?"
                       r"(?P<unit>小时|钟头|分钟)")
_DAYS_PER = {"工作日每天": 5, "每天": 7, "一天": 7, "每日": 7, "每晚": 7, "天天": 7}
_RE_BARE_NUMBER = re.compile(rf"(?:大概|大约|差不多|能有)?(?P<n>{_NUM})(?:个)?(?:小时)?(?:左右)?")
_RE_LEVEL = re.compile(r"零基础|没有?(?:任何)?基础|有(?:一点|一些|一定的?)基础|学过一点|初学者?|新手")
_RE_GOAL_CUT = re.compile(r"帮我|帮忙|请你|拆|分解|分阶段|规划|制定|怎么|如何|做个|做一个")
_RE_GOAL_LEAD = re.compile(r"^(?:我|想要|想|要|打算|准备|计划|希望|在|把|争取|内|以内|之内|这个|将|今年|明年|后年)+")
_RE_GOAL_TAIL = re.compile(r"(?:这个目标|这件事|这个|的|吧|呢)+$")
_RE_CLAUSE = re.compile(r"[，,。！!？?；;\s]+")
_STAGES = {
    1: (("冲刺完成", "集中时间完成最关键的部分，确保按时达成", 1.0),),
    3: (("起步准备", "明确标准、准备资料，建立每周固定的投入节奏", 0.3),
        ("集中推进", "完成主要内容，每周检查一次进度", 0.45),
        ("冲刺收尾", "查漏补缺，做最终检验", 0.25)),
    4: (("打基础", "明确标准、准备资料，建立每周固定的投入节奏", 0.25),
        ("系统推进", "按计划完成主要内容，每周检查一次进度", 0.35),
        ("强化提升", "针对薄弱环节专项练习，做阶段性检验", 0.25),
        ("冲刺收尾", "查漏补缺，做最终检验", 0.15)),
}
_FOUR_STAGES_FROM_DAYS = 42  # six weeks or more make room for a separate strengthening stage
_STEPS = ("梳理「{goal}」的具体要求并准备资料", "开始第一部分内容，记下卡住的地方", "整理笔记，标出难点",
          "针对难点专项练习", "做一次小检验，看看进展", "复盘两周进度，调整下一阶段计划")
_FOUR_STEPS = (0, 1, 3, 5)
_PROMPT = ("你是时间管理助手。请只根据 facts 写一段中文的长期目标阶段规划：按 stages 的顺序写出每个阶段的名称、"
           "起止日期和重点，不要增加 facts 之外的阶段、日期或数字。")

_DEFINITIONS = [
    definition(NAME, "split", "把长期目标拆成到截止日期的几个阶段，并给出近两周的子任务",
               required=list(REQUIRED), optional=list(OPTIONAL), needs_candidates=False),
]


def _add_months(moment: datetime, months: int) -> datetime:
    years, index = divmod(moment.month - 1 + months, 12)
    year, month = moment.year + years, index + 1
    return moment.replace(year=year, month=month, day=min(moment.day, calendar.monthrange(year, month)[1]))


def _span_deadline(match: re.Match[str], now: datetime) -> datetime:
    n = 0.5 if match.group("n") == "半" else float(parse_chinese_number(match.group("n")) or 0)
    unit = match.group("unit")
    if unit.startswith("年"):
        return _add_months(now, round(n * 12))
    if "月" in unit:
        return _add_months(now, int(n)) + timedelta(days=15 if n % 1 else 0)  # 半个月 is about 15 days
    return now + timedelta(days=n * (7 if unit in ("周", "个星期", "个礼拜") else 1))


def _month_day(match: re.Match[str], year: int) -> date | None:
    month = parse_chinese_number(match.group("m"))
    if not isinstance(month, int) or not 1 <= month <= 12:
        return None
    last = calendar.monthrange(year, month)[1]
    if match.group("d"):
        day = parse_chinese_number(match.group("d"))
        return date(year, month, day) if isinstance(day, int) and 1 <= day <= last else None
    if match.group("edge") in ("初", "中"):
        return date(year, month, 1 if match.group("edge") == "初" else 15)
    if match.group("before") and not match.group("edge"):
        return date(year, month, 1) - timedelta(days=1)  # 三月前: by the end of February
    return date(year, month, last)


def _month_deadline(match: re.Match[str], today: date) -> date | None:
    said = match.group("y")
    if said:
        return _month_day(match, today.year + _YEARS[said] if said in _YEARS else int(said[:4]))
    found = _month_day(match, today.year)
    # an unqualified month already past (三月 said in December) is next year's
    return _month_day(match, today.year + 1) if found and found < today else found


def find_deadline(text: str, now: datetime) -> tuple[datetime, str] | None:
    """(deadline, the words that said it): 三个月/半年内 from `now`, 明年三月前/年底/2027年3月1日 at that day's end;
    None when the text says no deadline after `now`."""
    found = _deadline_words(text, now)
    return found if found is not None and found[0] > now else None


def _deadline_words(text: str, now: datetime) -> tuple[datetime, str] | None:
    tz = now.tzinfo
    if year_end := _RE_YEAR_END.search(text):
        return at_day_end(date(now.year + _YEARS[year_end.group("y") or "今年"], 12, 31), tz), year_end.group(0)
    month = _RE_MONTH.search(text)
    if month and (day := _month_deadline(month, now.date())):
        return at_day_end(day, tz), month.group(0)
    if span := _RE_SPAN.search(text):
        return _span_deadline(span, now), span.group(0)
    found = extract_datetime(text, now=now, tz=tz)
    if found is None:
        return None
    return (at_day_end(found.start.date(), tz) if found.all_day else found.start), found.text


def find_weekly_hours(text: str, *, bare: bool) -> tuple[float, str] | None:
    """(hours per week, the words that said it): 每周五小时 → 5, 一天一小时 → 7, 工作日每天两小时 → 10; with
    `bare`, a number alone (10, 十个小时) is per week too. None outside [0.5, 168]."""
    match = _RE_HOURS.search(text)
    if match and (match.group("per") or bare):
        amount = float(parse_chinese_number(match.group("n")) or 0) if match.group("n") else 0.0
        amount += 0.5 if match.group("half") else 0
        amount /= 60 if match.group("unit") == "分钟" else 1
        amount *= _DAYS_PER.get(match.group("per") or "", 1)
        said = match.group(0)
    elif bare and (number := _RE_BARE_NUMBER.fullmatch(text.strip())):
        amount, said = float(parse_chinese_number(number.group("n")) or 0), number.group(0)
    else:
        return None
    return (round(amount, 1), said) if _MIN_WEEKLY_HOURS <= amount <= _MAX_WEEKLY_HOURS else None


def _tidy(hours: float) -> float | int:
    return int(hours) if float(hours).is_integer() else hours


def _goal_title(text: str) -> str | None:
    for clause in _RE_CLAUSE.split(text):
        cut = _RE_GOAL_CUT.search(clause)
        title = _RE_GOAL_TAIL.sub("", _RE_GOAL_LEAD.sub("", clause[:cut.start()] if cut else clause))
        if title:
            return title[:200]
    return None


class LongTaskSplitAgent:
    name = NAME
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
            found["weekly_hours"] = _tidy(hours[0])
            rest = rest.replace(hours[1], "，", 1)
        deadline = find_deadline(rest, now)
        if deadline:
            found["deadline"] = deadline[0].isoformat()
            rest = rest.replace(deadline[1], "", 1)
        level = _RE_LEVEL.search(rest)
        if level:
            found["current_level"] = level.group(0)
            rest = rest.replace(level.group(0), "，", 1)
        if title := _goal_title(rest):
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
            return _tidy(hours[0]) if hours else None
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
                value = _tidy(value) if _MIN_WEEKLY_HOURS <= value <= _MAX_WEEKLY_HOURS else None
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
            return failure(NAME, function, self.questions[missing[0]], missing_fields=missing,
                           questions={name: self.questions[name] for name in missing})
        tz = zone(inp)
        now, today, goal, level = inp.now, inp.now.date(), fields["goal_title"], fields.get("current_level")
        deadline, hours = datetime.fromisoformat(fields["deadline"]).astimezone(tz), fields["weekly_hours"]
        due = date_label(deadline.date(), today)
        stages = [(name, focus, date_label(a, today), date_label(b, today))
                  for name, focus, a, b in _stages(today, deadline.date())]
        subtasks = _subtasks(goal, hours, now, deadline, _stages(today, deadline.date()))
        template = (f"「{goal}」计划（{date_label(today, today)}–{due}，每周约 {hours} 小时）：\n"
                    + "".join(f"{i}. {name}（{a}–{b}）：{focus}\n" for i, (name, focus, a, b) in enumerate(stages, 1))
                    + f"近两周先完成 {len(subtasks)} 个子任务，每个阶段开始前再细化下一步。")
        facts = {"goal": goal, "deadline": due, "weekly_hours": hours, "current_level": level,
                 "stages": [{"name": name, "start": a, "end": b, "focus": focus} for name, focus, a, b in stages]}
        overview = await compose(self._writer, _PROMPT, facts=facts, template=template, timeout_s=self._timeout_s,
                                 max_chars=8000)
        summary = f"目标：{goal}；截止：{due}；每周可投入约 {hours} 小时；当前基础：{level or '未说明'}"
        payload = GoalSplitPayload(
            goal=LongGoalPayload(title=goal, description=inp.raw_input[:4000] or None, plan_overview=overview,
                                 start_at=now, deadline_at=deadline),
            subtasks=subtasks, task_profile_summary=summary).model_dump(mode="json", exclude_none=True)
        preview = f"新建长期目标「{goal}」：分 {len(stages)} 个阶段，{due}前完成；先安排近两周的 {len(subtasks)} 个子任务"
        candidate = GoalSplitCandidate(plan_overview=overview, task_profile_summary=summary,
                                       subtasks=payload["subtasks"])
        action = {"action": "goal_split", "target_type": "long_goal", "payload": payload, "preview_text": preview}
        return reply(NAME, function, candidate.model_dump(mode="json"), db_action=action)


def _deadline_value(value: str | datetime, now: datetime) -> str | None:
    """A deadline given as a date-time (with offset, after `now`), as its ISO text, or as words."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value)
        except ValueError:
            found = find_deadline(value, now)
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


def _subtasks(goal: str, hours: float, now: datetime, deadline: datetime,
              stages: list[tuple[str, str, date, date]]) -> list[SubtaskPayload]:
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
    for step, offset in zip(steps, offsets):
        day = now.date() + timedelta(days=offset)
        stage = next((name for name, _, first, last in stages if first <= day <= last), stages[-1][0])
        subtasks.append(SubtaskPayload(title=_STEPS[step].format(goal=goal)[:200],
                                       description=f"约 {minutes} 分钟；属于「{stage}」阶段",
                                       due_at=min(at_day_end(day, now.tzinfo), deadline)))
    return subtasks
