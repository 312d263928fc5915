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
    """A free-form JSON object's bounds, each one a JSON Schema keyword too (`documented`): nesting depth (the object
    itself is level 1), keys per object, items per array, characters per string (keys included)."""

    max_depth: int
    max_keys: int
    max_items: int
    max_string: int

    def __call__(self, value: dict[str, Any]) -> dict[str, Any]:
        stack: list[tuple[Any, int]] = [(value, 1)]
        while stack:
            node, depth = stack.pop()
            if isinstance(node, str):
                if len(node) > self.max_string:
                    self._refuse(f"holds a string of more than {self.max_string} characters")
                continue
            if not isinstance(node, (dict, list)):
                continue
            if depth > self.max_depth:
                self._refuse(f"nests deeper than {self.max_depth} levels")
            if isinstance(node, dict):
                if len(node) > self.max_keys:
                    self._refuse(f"has an object of more than {self.max_keys} keys")
                stack.extend((key, depth) for key in node)
                stack.extend((item, depth + 1) for item in node.values())
            else:
                if len(node) > self.max_items:
                    self._refuse(f"has an array of more than {self.max_items} items")
                stack.extend((item, depth + 1) for item in node)
        return value

    @staticmethod
    def _refuse(why: str) -> None:
        raise PydanticCustomError(OBJECT_TOO_LARGE, "{why}", {"why": why})


SLOTS_BOUNDS = JsonBounds(max_depth=3, max_keys=32, max_items=32, max_string=2000)
PAYLOAD_BOUNDS = JsonBounds(max_depth=6, max_keys=64, max_items=128, max_string=8000)
