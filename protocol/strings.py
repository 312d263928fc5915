"""The string rules of request bodies, each validated and stated in the schema by one type: no NUL (U+0000)
anywhere, since PostgreSQL's text and jsonb cannot store one, and text that is not blank."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AfterValidator, Field, GetJsonSchemaHandler, StrictStr, TypeAdapter
from pydantic_core import CoreSchema
from typing_extensions import TypeAliasType

from protocol.limits import PAYLOAD_BOUNDS, SLOTS_BOUNDS, JsonBounds, bounded_text

# The characters of Python's str.isspace(), spelled out: the rule on the wire is `text.strip()`, and the `\s` of
# JSON Schema (ECMA-262) and of Rust's regex each differ from Python's (U+FEFF; U+001C..U+001F).
WHITESPACE = r"\t-\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
NO_NUL = r"^[^\x00]*$"
NOT_BLANK = rf"^[{WHITESPACE}]*[^\x00{WHITESPACE}][^\x00]*$"


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise ValueError("must not contain the NUL character (U+0000)")
    return value


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


def _nowhere_nul(value: Any, where: str = "") -> Any:
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError(f"{where or 'a string'} must not contain the NUL character (U+0000)")
    elif isinstance(value, dict):
        for key, item in value.items():
            _nowhere_nul(key, f"the key {key!r}")
            _nowhere_nul(item, f"{where}.{key}" if where else key)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _nowhere_nul(item, f"{where}[{index}]")
    return value


PlainStr = Annotated[StrictStr, AfterValidator(_no_nul), Field(json_schema_extra={"pattern": NO_NUL})]
NonBlankStr = Annotated[
    StrictStr, AfterValidator(_no_nul), AfterValidator(_not_blank), Field(json_schema_extra={"pattern": NOT_BLANK})
]
# A turn's text: documented as not blank, and refused blank by the engine, whose error names the field; refused over
# the configured length here, before anything runs (protocol.limits).
TurnText = Annotated[
    StrictStr, AfterValidator(bounded_text), AfterValidator(_no_nul), Field(json_schema_extra={"pattern": NOT_BLANK})
]

_DocStr = Annotated[str, Field(pattern=NO_NUL)]
# the value is a string so that mypy reads the recursion (it cannot resolve forward references inside the call)
JsonWithoutNul = TypeAliasType(
    "JsonWithoutNul", "_DocStr | float | bool | None | list[JsonWithoutNul] | _JsonObjectDoc"
)
_JsonObjectDoc = Annotated[dict[str, JsonWithoutNul], Field(json_schema_extra={"propertyNames": {"pattern": NO_NUL}})]


class _DocumentedAs:
    """Puts another type's schema in the document: a free-form object is validated as `dict[str, Any]` (one walk,
    one clear error) but documented as the recursive JSON it must be."""

    def __init__(self, documented: Any) -> None:
        self._documented = TypeAdapter(documented).core_schema

    def __get_pydantic_json_schema__(self, core_schema: CoreSchema, handler: GetJsonSchemaHandler) -> Any:
        return handler(self._documented)


def _bounded_doc(bounds: JsonBounds, name: str) -> Any:
    """The type a bounded object is documented as: its levels as named types (`{name}1` holds only scalars), each
    with the bounds' maxLength, maxItems and maxProperties, NUL nowhere."""
    text = Annotated[str, Field(pattern=NO_NUL, max_length=bounds.max_string)]
    keyed: dict[str, Any] = {"propertyNames": {"pattern": NO_NUL, "maxLength": bounds.max_string}}
    level: Any = None
    for depth in range(1, bounds.max_depth + 1):
        scalars: Any = text | float | bool | None
        if level is None:
            level = TypeAliasType(f"{name}{depth}", scalars)  # type: ignore[misc]
            continue
        array = Annotated[list[level], Field(max_length=bounds.max_items)]
        obj = Annotated[dict[str, level], Field(max_length=bounds.max_keys, json_schema_extra=keyed)]
        level = TypeAliasType(f"{name}{depth}", scalars | array | obj)  # type: ignore[misc]
    return Annotated[dict[str, level], Field(max_length=bounds.max_keys, json_schema_extra=keyed)]


# bounded before the walk for NUL (protocol.limits): a write request's payload, a profile; a turn's slots more tightly
JsonObject = Annotated[
    dict[str, Any],
    AfterValidator(PAYLOAD_BOUNDS),
    AfterValidator(_nowhere_nul),
    _DocumentedAs(_bounded_doc(PAYLOAD_BOUNDS, "JsonPayloadLevel")),
]
SlotsObject = Annotated[
    dict[str, Any],
    AfterValidator(SLOTS_BOUNDS),
    AfterValidator(_nowhere_nul),
    _DocumentedAs(_bounded_doc(SLOTS_BOUNDS, "JsonSlotsLevel")),
]
