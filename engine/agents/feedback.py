"""feedback_agent: turn what the user says about one resolved item into a normalized feedback record to confirm."""

from __future__ import annotations

import re

from engine.agents.base import definition, failure, reply, the_one_candidate, unknown
from engine.slots import parse_chinese_number
from protocol.agents import AgentFunctionDefinition, AgentName, AgentResponseEnvelope, SubAgentInputBase
from protocol.write_payloads import FeedbackPayload, FeedbackStatus

NAME: AgentName = "feedback_agent"
_MAX_MINUTES = 24 * 60
# first match wins: the more specific or negated readings come before the plain "done" words, so 没做完 is
# not_completed, 做了一半 partially_completed and 没时间，改天再做 deferred
_STATUS_RULES: tuple[tuple[FeedbackStatus, re.Pattern[str]], ...] = (
    ("cancelled", re.compile(r"取消|不做了|不用做了|不去了|不弄了|不需要了|作废")),
    (
        "partially_completed",
        re.compile(r"一半|部分|只做了|只完成了|只(?:跑|写|看|背|练|学|读|弄)了|(?<![十百])[一二三四五六七八九]成|还差"),
    ),
    ("deferred", re.compile(r"推迟|改天|延期|下次|延后|往后推|拖延|(?:明天|以后|晚点|回头)再")),
    (
        "not_completed",
        re.compile(
            r"没(?:有)?(?:完成|做|去|时间|弄|跑|写|看|练|学|读|背|动|来得及|空|能|坚持|顾上|跳|打|听|干|吃|喝|买|聊)|未完成|没.{0,3}完|忘.{0,2}了|"
            r"坚持不下来|放弃了"
        ),
    ),
    (
        "completed",
        re.compile(
            r"完成|做完|搞定|办(?:了|完|好)|已经.{0,8}(?:完|好)|[写跑看读背开弄练做学改]完|完了|参加了|去过了|交了|交上去|提交了|打过了|去了|结束了|"
            r"弄好了|做好了|练了|跑了|学了|发给|发出去了|(?<!没)(?<!没有)(?:做|看|读|背|写|听|上|打|吃|喝|买|聊|取|寄)了|"
            r"(?<!没)(?<!没有)(?:打|寄|取|买)(?:电话|快递|包裹|药|菜)了"
        ),
    ),
)
_STATUS_TEXT: dict[FeedbackStatus, str] = {
    "completed": "已完成",
    "not_completed": "未完成",
    "partially_completed": "完成了一部分",
    "deferred": "已推迟",
    "cancelled": "已取消",
}
_NUM = r"\d+(?:\.\d+)?|[零〇一二两三四五六七八九十百]+(?:点[零一二三四五六七八九]+)?"
# _NUM where a match begins: never inside a run of digits or numerals (a match there is a match one character earlier,
# so nothing is lost), which keeps a long run from being tried at each of its characters (quadratic)
_NUM_FIRST = (
    r"(?<!\d)\d+(?:\.\d+)?|(?<![零〇一二两三四五六七八九十百])"
    r"[零〇一二两三四五六七八九十百]+(?:点[零一二三四五六七八九]+)?"
)
_RE_DURATION = re.compile(
    rf"(?P<h>(?:{_NUM_FIRST})个?半?|半)个?(?:小时|钟头)(?:(?P<hm>{_NUM})分钟?)?|(?P<m>{_NUM_FIRST})分钟"
)

_DEFINITIONS = [
    definition(
        NAME,
        "record",
        "记录用户对一项已有安排的执行反馈（完成、未完成、部分完成、推迟、取消）及用时",
        required=["time_range"],
        needs_candidates=True,
    )
]


def feedback_status(text: str) -> FeedbackStatus | None:
    """The feedback status the words say, negated and partial readings first; None when they say none."""
    for status, pattern in _STATUS_RULES:
        if pattern.search(text):
            return status
    return None


def duration_minutes(text: str) -> int | None:
    """Minutes the text reports spending (用了40分钟, 一个半小时, 1.5小时, 一小时二十分); None when none or over
    a day."""
    match = _RE_DURATION.search(text)
    if match is None:
        return None
    if match.group("m"):
        minutes = parse_chinese_number(match.group("m")) or 0
    else:
        hours = 0.5 if match.group("h") == "半" else parse_chinese_number(match.group("h")) or 0
        minutes = hours * 60 + (parse_chinese_number(match.group("hm") or "") or 0)
    minutes = round(minutes)
    return minutes if 0 < minutes <= _MAX_MINUTES else None


class FeedbackAgent:
    name: AgentName = NAME

    def definitions(self) -> list[AgentFunctionDefinition]:
        return list(_DEFINITIONS)

    async def run(self, function: str, inp: SubAgentInputBase) -> AgentResponseEnvelope:
        if function != "record":
            raise unknown(NAME, function)
        item = the_one_candidate(inp)
        if item is None:
            return failure(NAME, function, "没有确定你说的是哪一项安排，请说一下它的名字或时间。")
        status = feedback_status(inp.raw_input)
        if status is None:
            return failure(NAME, function, f"「{item.title}」进展如何？是完成了、没完成、做了一部分，还是要改天再做？")
        minutes = duration_minutes(inp.raw_input)
        normalized = f"「{item.title}」{_STATUS_TEXT[status]}" + (f"，用时 {minutes} 分钟" if minutes else "")
        payload = FeedbackPayload(
            task_item_id=item.id,
            item_version=item.version,
            feedback_status=status,
            normalized_feedback=normalized,
            duration_minutes=minutes,
            occurred_at=inp.now,
        ).model_dump(mode="json")
        preview = f"记录反馈：{normalized}"
        action = {"action": "feedback", "target_type": "feedback", "payload": payload, "preview_text": preview}
        return reply(NAME, function, {"reply": preview, "feedback": payload}, db_action=action)
