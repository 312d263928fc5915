"""review_agent: a text review of a range, computed only from the items and feedback execution handed over.

The statistics are the facts: the template text is built from them alone, and a TextWriter that answers in time
only rephrases them (it receives the same statistics); the statistics always travel in the result.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from engine.agents.base import definition, reply, unknown, zone
from engine.agents.text import DEFAULT_WRITER_TIMEOUT_S, TextWriter, compose, date_label, is_whole_days, single_day
from protocol.agents import (
    AgentFunctionDefinition,
    AgentName,
    AgentResponseEnvelope,
    CandidateItem,
    FeedbackFact,
    SubAgentInputBase,
)

NAME: AgentName = "review_agent"
_OUTCOMES = ("completed", "partially_completed", "not_completed", "deferred", "cancelled", "no_feedback")
_OUTCOME_TEXT = {
    "partially_completed": "部分完成",
    "not_completed": "未完成",
    "deferred": "推迟",
    "cancelled": "取消",
    "no_feedback": "未记录结果",
}
_FEEDBACK_TEXT = {**_OUTCOME_TEXT, "completed": "完成"}
_UNFINISHED = ("partially_completed", "not_completed", "deferred")
# suggestions name no item and no number: everything specific in the text comes from the statistics
_SUGGESTIONS = (
    (80, "节奏不错，保持现在的安排强度，可以留些精力给更重要的事。"),
    (50, "大部分都完成了，把没做完的挪到精力好的时段，再给每件事留一点缓冲。"),
    (1, "完成得不多，下次试着少排几件，把大任务拆成小步骤。"),
)
_NO_DONE_YET = "还没有完成的记录，可以先从最小的一件事开始。"
_NO_FEEDBACK = "还没有反馈记录，做完一件事后告诉我一声，复盘会更准确。"
_PROMPT = (
    "你是时间管理助手。请只根据 facts 中的统计写一段简短的中文复盘：不要提到 facts 之外的任何事项、数字或日期，"
    "最后给一条具体可行的建议。"
)

_DEFINITIONS = [
    definition(
        NAME,
        "review",
        "根据时间范围内的安排和反馈事实生成文字复盘（完成情况、用时、建议），不写库",
        required=["time_range"],
        needs_candidates=True,
        writes=False,
    )
]


def _outcome(item: CandidateItem, latest: FeedbackFact | None) -> str:
    if latest is not None:
        return latest.feedback_status
    return item.status if item.status in ("completed", "cancelled", "deferred") else "no_feedback"


def _period(inp: SubAgentInputBase) -> str:
    tz = zone(inp)
    start, end = inp.time_range.start_at.astimezone(tz), inp.time_range.end_at.astimezone(tz)
    today = inp.now.astimezone(tz).date()
    day = single_day(start, end, tz)
    if day:
        return date_label(day, today, relative=True)
    if is_whole_days(start, end, tz):
        return f"{date_label(start.date(), today)}至{date_label((end - timedelta(days=1)).date(), today)}"
    return "这段时间"


def review_stats(inp: SubAgentInputBase) -> dict[str, Any]:
    """The review's facts: counts per outcome (an item's latest feedback, else its status), completion rate in
    percent of the items not cancelled, recorded minutes of the items' feedback, and the titles by outcome."""
    ids = {item.id for item in inp.candidate_items}
    facts = sorted((f for f in inp.feedbacks if f.task_item_id in ids), key=lambda f: f.occurred_at)
    latest = {fact.task_item_id: fact for fact in facts}
    # feedback given in the period on an item that has left it since (moved by a replan): part of what happened
    moved: dict[Any, FeedbackFact] = {}
    for fact in sorted(inp.feedbacks, key=lambda f: f.occurred_at):
        if fact.item_left_range and fact.task_item_id not in ids and _within(fact, inp):
            moved[fact.task_item_id] = fact
    outcomes = [(item, _outcome(item, latest.get(item.id))) for item in inp.candidate_items]
    counts = {name: sum(1 for _, outcome in outcomes if outcome == name) for name in _OUTCOMES}
    counted = len(outcomes) - counts["cancelled"]
    return {
        "period": _period(inp),
        "planned": len(outcomes),
        **counts,
        "completion_rate": round(100 * counts["completed"] / counted) if counted else 0,
        "recorded_minutes": sum(f.duration_minutes or 0 for f in facts),
        "feedback_count": len(facts),
        "completed_titles": [item.title for item, outcome in outcomes if outcome == "completed"],
        "unfinished": [
            {"title": item.title, "outcome": outcome} for item, outcome in outcomes if outcome in _UNFINISHED
        ],
        "no_feedback_titles": [item.title for item, outcome in outcomes if outcome == "no_feedback"],
        "moved_out": [
            {"title": fact.item_title or fact.normalized_feedback, "outcome": fact.feedback_status}
            for fact in moved.values()
        ],
    }


def _within(fact: FeedbackFact, inp: SubAgentInputBase) -> bool:
    return inp.time_range.start_at <= fact.occurred_at < inp.time_range.end_at


def _suggestion(stats: dict[str, Any]) -> str:
    if not stats["feedback_count"] and not stats["moved_out"] and not stats["completed"]:
        return _NO_FEEDBACK
    for floor, text in _SUGGESTIONS:
        if stats["completion_rate"] >= floor:
            return text
    return _NO_DONE_YET


def review_text(stats: dict[str, Any]) -> str:
    """The template review: every title and number in it is one of `stats`'."""
    moved = "".join(
        f"{'；' if i else ''}{m['title']}（{_FEEDBACK_TEXT[m['outcome']]}）" for i, m in enumerate(stats["moved_out"])
    )
    moved_line = f"这段时间的反馈里有 {len(stats['moved_out'])} 项之后已改期或移除：{moved}。" if moved else ""
    if not stats["planned"]:
        if moved_line:
            return f"{stats['period']}已没有留在这段时间的安排。\n{moved_line}"
        return f"{stats['period']}没有安排，暂时没有可以复盘的内容。"
    others = "".join(f"，{_OUTCOME_TEXT[name]} {stats[name]} 项" for name in _OUTCOMES[1:] if stats[name])
    lines = [
        f"{stats['period']}共安排 {stats['planned']} 项：完成 {stats['completed']} 项{others}，"
        f"完成率 {stats['completion_rate']}%。"
    ]
    if stats["completed_titles"]:
        lines.append("已完成：" + "、".join(stats["completed_titles"]) + "。")
    if stats["unfinished"]:
        lines.append(
            "没做完：" + "、".join(f"{u['title']}（{_OUTCOME_TEXT[u['outcome']]}）" for u in stats["unfinished"]) + "。"
        )
    if stats["no_feedback_titles"]:
        lines.append("还没记录结果：" + "、".join(stats["no_feedback_titles"]) + "。")
    if moved_line:
        lines.append(moved_line)
    if stats["recorded_minutes"]:
        lines.append(f"共记录用时 {stats['recorded_minutes']} 分钟。")
    lines.append("建议：" + _suggestion(stats))
    return "\n".join(lines)


class ReviewAgent:
    name: AgentName = NAME

    def __init__(self, writer: TextWriter | None = None, *, timeout_s: float = DEFAULT_WRITER_TIMEOUT_S) -> None:
        self._writer = writer
        self._timeout_s = timeout_s

    def definitions(self) -> list[AgentFunctionDefinition]:
        return list(_DEFINITIONS)

    async def run(self, function: str, inp: SubAgentInputBase) -> AgentResponseEnvelope:
        if function != "review":
            raise unknown(NAME, function)
        stats = review_stats(inp)
        text = await compose(self._writer, _PROMPT, facts=stats, template=review_text(stats), timeout_s=self._timeout_s)
        return reply(NAME, function, {"reply": text, "stats": stats})
