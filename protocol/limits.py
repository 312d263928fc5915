"""The size bounds of the wire models: a turn's text (the configured `max_text_chars`, under a hard ceiling) and the
free-form JSON objects (`slots`, a write request's `payload`, a profile) by depth, members and characters.

The text limit is the app's own setting: the ingress binds it for each request and each WebSocket connection
(`text_limit`, set by serve_app.http.limits), so a text over it is refused while its body is validated, before any
user or session row exists. Outside a request the hard ceiling still holds."""

from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from pydantic_core import PydanticCustomError

TEXT_CEILING = 16384  # no configuration lets a turn's text past this many characters
text_limit: ContextVar[int] = ContextVar("text_limit", default=TEXT_CEILING)

TEXT_TOO_LONG = "text_too_long"
OBJECT_TOO_LARGE = "object_too_large"
WIRE_CODES = frozenset({TEXT_TOO_LONG, OBJECT_TOO_LARGE})  # validation failures answered with their own code


def bounded_text(value: str) -> str:
    limit = min(text_limit.get(), TEXT_CEILING)
    if len(value) > limit:
        raise PydanticCustomError(
            TEXT_TOO_LONG,
            "is {length} characters; the limit is {limit}",
            {"length": len(value), "limit": limit},
        )
    return value


@dataclass(frozen=True)
class JsonBounds:
    """A free-form JSON object's bounds: nesting depth, members (keys and list items, all levels together) and
    characters (keys and string values together)."""

    max_depth: int
    max_members: int
    max_chars: int

    def __call__(self, value: dict[str, Any]) -> dict[str, Any]:
        members, chars = 0, 0
        stack: list[tuple[dict[str, Any] | list[Any], int]] = [(value, 1)]
        while stack:
            node, depth = stack.pop()
            if depth > self.max_depth:
                self._refuse(f"nests deeper than {self.max_depth} levels")
            items = node.items() if isinstance(node, dict) else enumerate(node)
            for key, item in items:
                members += 1
                chars += len(key) if isinstance(key, str) else 0
                if isinstance(item, str):
                    chars += len(item)
                elif isinstance(item, (dict, list)):
                    stack.append((item, depth + 1))
            if members > self.max_members:
                self._refuse(f"holds more than {self.max_members} keys and items")
            if chars > self.max_chars:
                self._refuse(f"holds more than {self.max_chars} characters")
        return value

    @staticmethod
    def _refuse(why: str) -> None:
        raise PydanticCustomError(OBJECT_TOO_LARGE, "{why}", {"why": why})


SLOTS_BOUNDS = JsonBounds(max_depth=4, max_members=64, max_chars=8192)
PAYLOAD_BOUNDS = JsonBounds(max_depth=8, max_members=4096, max_chars=262144)
