"""Destination slot: the place after 导航去/带我去/去/回 (去人民广场怎么走 → 人民广场)."""

from __future__ import annotations

import re

_DEST_TRIGGER = re.compile(
    r"导航(?:一下)?(?:去往|前往|去到|去|到|至|回)"
    r"|(?:带我|载我|送我|开车|驾车|我要|我想|我得|我们|咱们)?(?:去往|前往|开往|回到|去到|去|到|回)"
)
_DEST_CLAUSE_END = re.compile(r"[，。,.!！?？;；、]")
_DEST_STOP = re.compile(
    r"怎么走|怎么去|怎么过去|怎么到|如何走|的路线|路线|的路|要多久|多久|多远|还有多|远不远|在哪"
    r"|不走高速|不要高速|不上高速|避开|避免|走高速|顺便|然后"
)
_DEST_TRAILING = re.compile(r"(?:吧|呀|啊|哦|呢|嘛|了|啦|一下|一趟)+$")
_DEST_LEADING = re.compile(r"^(?:一下|一趟)+")
_DEST_REJECT = {"去", "来", "这", "那", "这里", "那里", "哪", "哪里", "哪儿", "这儿", "那儿"}


def _clean_destination(raw: str) -> str | None:
    clause = _DEST_CLAUSE_END.split(raw.strip(), maxsplit=1)[0]
    stop = _DEST_STOP.search(clause)
    if stop:
        clause = clause[: stop.start()]
    clause = _DEST_LEADING.sub("", _DEST_TRAILING.sub("", clause.strip())).strip()
    return clause if clause and clause not in _DEST_REJECT else None


def extract_destination(text: str) -> str | None:
    """Place after 导航去/带我去/去/回...: 去人民广场怎么走 → 人民广场, 开车回家 → 家."""
    text = text or ""
    for match in _DEST_TRIGGER.finditer(text):
        destination = _clean_destination(text[match.end() :])
        if destination:
            return destination
    return None
