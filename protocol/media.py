"""Media protocol (seed 002): input modalities, the upload answer, and what the ASR/OCR modules return."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field

from protocol.base import WireModel

InputModality = Literal["text", "voice_asr", "image_ocr"]
FileType = Literal["image", "audio"]
# ok: text recognized; the rest say why there is none (the orchestrator turns each into a typed error)
RecognitionStatus = Literal[
    "ok", "no_speech", "no_text", "undecodable", "too_large", "not_found", "forbidden", "wrong_kind"
]

MEDIA_PATH = "/api/v1/media/"
# an object key is `{kind}/{file name}` (engine.media_keys.KEY_PATTERN); the file name's shape, unanchored
OBJECT_FILE_NAME = r"[0-9a-f]{32}\.[a-z0-9]{2,5}"


def source_url_pattern(kind: FileType, public_base_url: str = "") -> str:
    """The source_url Baton hands out for an object of `kind`: the path, or with `public_base_url` set, that origin
    before it too."""
    origin = public_base_url.rstrip("/")
    prefix = f"(?:{re.escape(origin)})?" if origin else ""
    return f"^{prefix}{MEDIA_PATH}{kind}/{OBJECT_FILE_NAME}$"


class UploadResponse(WireModel):
    source_url: str
    object_key: str
    file_type: FileType
    content_type: str
    bytes: int


class Segment(WireModel):
    start_s: float
    end_s: float
    text: str
    no_speech_prob: float = 0.0


class TextLine(WireModel):
    text: str
    confidence: float
    box: list[list[float]] = Field(description="Four corner points (x, y), clockwise from top-left.")


class Recognition(WireModel):
    """The ASR/OCR module contract: `source_url` in, `recognized_text` and `status` out, plus details."""

    status: RecognitionStatus
    recognized_text: str = ""
    reason: str = ""
    language: str | None = None
    duration_s: float | None = None
    segments: list[Segment] = Field(default_factory=list)
    lines: list[TextLine] = Field(default_factory=list)
    elapsed_ms: float = 0.0
