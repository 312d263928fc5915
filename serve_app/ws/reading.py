"""Reading one WebSocket frame: its size and nesting before it is decoded, then the envelope and the typed payload
of its type; every failure a FrameError with code, message and field."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from engine.errors import BatonError
from protocol.base import WireModel
from protocol.limits import WIRE_CODES
from protocol.ws import CLIENT_PAYLOADS, WsEnvelope
from serve_app.http.limits import too_deep


class FrameError(BatonError):
    """A frame that cannot be read; `code` says why."""

    def __init__(self, code: str, message: str, field: str | None = None) -> None:
        super().__init__(message, field=field)
        self.code = code


def read_frame(message: Mapping[str, Any], max_bytes: int, *, max_depth: int) -> tuple[WsEnvelope, WireModel]:
    """The envelope and its typed payload, or FrameError."""
    text = message.get("text")
    if text is None:
        raise FrameError("binary_frame", "Frames are JSON text (a WsEnvelope), not binary.")
    data = text.encode("utf-8") if len(text) <= max_bytes else None  # a longer text is too many bytes already
    if data is None or len(data) > max_bytes:
        raise FrameError("frame_too_large", f"A frame holds at most {max_bytes} bytes.")
    if too_deep(data, max_depth):
        raise FrameError("json_too_deep", f"The frame's JSON nests deeper than {max_depth} levels.")
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FrameError("invalid_json", f"The frame is not valid JSON: {exc.msg}.") from exc
    try:
        frame = WsEnvelope.model_validate(raw)
    except ValidationError as exc:
        raise _field_error(exc, prefix="") from exc
    model = CLIENT_PAYLOADS.get(frame.type)
    if model is None:
        raise FrameError(
            "unknown_type", f"Unknown frame type {frame.type!r}; expected one of {', '.join(CLIENT_PAYLOADS)}.", "type"
        )
    try:
        return frame, model.model_validate(frame.payload)
    except ValidationError as exc:
        raise _field_error(exc, prefix="payload") from exc


def _field_error(exc: ValidationError, *, prefix: str) -> FrameError:
    first = exc.errors()[0]
    where = ".".join(str(p) for p in (prefix, *first.get("loc", ())) if p != "")
    kind = str(first.get("type"))
    code = kind if kind in WIRE_CODES else "missing_field" if kind == "missing" else "invalid_field"
    return FrameError(code, f"{where or 'frame'}: {first.get('msg', 'invalid')}", where or None)
