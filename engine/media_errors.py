"""Typed errors of media input (upload and voice/image turns); the ingress maps each to a 4xx/503 and the envelope."""

from __future__ import annotations

from engine.errors import BatonError, InvalidInput


class UnsupportedMediaType(InvalidInput):
    code = "unsupported_media_type"


class MediaTooLarge(InvalidInput):
    code = "media_too_large"


class EmptyMedia(InvalidInput):
    code = "empty_file"


class UndecodableMedia(InvalidInput):
    code = "undecodable_media"


class NoSpeech(InvalidInput):
    code = "no_speech"


class NoText(InvalidInput):
    code = "no_text"


class ForeignSourceUrl(InvalidInput):
    code = "foreign_source_url"


class MediaKindMismatch(InvalidInput):
    code = "media_kind_mismatch"


class MediaNotFound(BatonError):
    code = "media_not_found"


class MediaForbidden(BatonError):
    code = "media_forbidden"


class MediaUnavailable(BatonError):
    """The ASR/OCR stage missed its budget or failed; nothing was executed and the client may retry."""

    code = "media_unavailable"
