"""Order id slot: ids after 订单/单号/尾号 and bare letter+digit codes like A12345."""

from __future__ import annotations

import re

from engine.slots.limits import DEFAULT_LIMITS, SlotLimits
from engine.slots.numbers import _cn_digit_string

_ORDER_KEYWORD = r"(?:订单编号|订单号码|快递单号|运单号|订单号|单号|订单|编号)"
_ORDER_AFTER_KEYWORD = re.compile(
    _ORDER_KEYWORD
    + r"\s*(?:是|为|：|:)?\s*(?:(?P<cn>[零〇幺一二三四五六七八九]{4,})"
    + r"|(?P<id>[A-Za-z0-9](?:[A-Za-z0-9-]|\s+(?=[A-Za-z0-9]))*))"
)
_ORDER_TAIL = re.compile(r"(?<!手机)(?<!电话)尾号(?:是|为)?\s*(?P<id>\d+)")
_ORDER_BARE = re.compile(r"(?<![A-Za-z0-9-])(?P<id>[A-Za-z]{1,4}-?\d+(?:-\d+)*)(?![A-Za-z0-9-])")
_NOT_ORDER_AFTER = set("度点分时号月日年:：")


def _normalize_order_id(raw: str) -> str:
    return re.sub(r"\s+", "", raw).strip("-").upper()


def _order_id_ok(order_id: str, limits: SlotLimits) -> bool:
    alnum = [c for c in order_id if c.isalnum()]
    return len(alnum) >= limits.order_id_min_length and any(c.isdigit() for c in alnum)


def _order_from_match(text: str, match: re.Match[str], limits: SlotLimits) -> str | None:
    if text[match.end() : match.end() + 1] in _NOT_ORDER_AFTER:
        return None
    groups = match.groupdict()
    raw = _cn_digit_string(groups["cn"]) if groups.get("cn") else groups["id"]
    order_id = _normalize_order_id(raw)
    return order_id if _order_id_ok(order_id, limits) else None


def extract_order_id(text: str, limits: SlotLimits = DEFAULT_LIMITS) -> str | None:
    """Order id after 订单/单号/尾号 (spaces removed, upper-cased), else a bare letter+digit code like A12345.

    Pure digit strings are only taken after a keyword, so phone numbers and times are not mistaken for ids.
    """
    text = text or ""
    for pattern in (_ORDER_AFTER_KEYWORD, _ORDER_TAIL, _ORDER_BARE):
        for match in pattern.finditer(text):
            order_id = _order_from_match(text, match, limits)
            if order_id:
                return order_id
    return None
