"""What an upload really is: the format from its leading bytes (never the file name), then a decode within the
limits."""

from __future__ import annotations

import io
from dataclasses import dataclass

from config.media import MediaConfig, MediaKind
from engine.media_errors import EmptyMedia, MediaTooLarge, UndecodableMedia, UnsupportedMediaType
from media.audio import AUDIO_RATE, DECODE_TIMEOUT_S, decode_audio

__all__ = ["AUDIO_RATE", "decode_audio", "inspect_upload", "sniff"]  # the ASR replica decodes with the same bounds

CONTENT_TYPES = {
    "png": "image/png",
    "jpeg": "image/jpeg",
    "webp": "image/webp",
    "bmp": "image/bmp",
    "gif": "image/gif",
    "wav": "audio/wav",
    "mp3": "audio/mpeg",
    "m4a": "audio/mp4",
    "webm": "audio/webm",
    "ogg": "audio/ogg",
    "flac": "audio/flac",
}
KIND = {fmt: ("image" if ctype.startswith("image/") else "audio") for fmt, ctype in CONTENT_TYPES.items()}


@dataclass(frozen=True)
class Inspected:
    kind: MediaKind
    format: str
    content_type: str
    width: int | None = None
    height: int | None = None
    duration_s: float | None = None


def sniff(data: bytes) -> str | None:
    """The container format named by the leading bytes, or None."""
    head = data[:16]
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "webp"
    if head.startswith(b"RIFF") and head[8:12] == b"WAVE":
        return "wav"
    if head.startswith(b"BM") and len(data) > 26:
        return "bmp"
    if head.startswith(b"fLaC"):
        return "flac"
    if head.startswith(b"OggS"):
        return "ogg"
    if head.startswith(b"\x1a\x45\xdf\xa3"):
        return "webm"
    if head[4:8] == b"ftyp":
        return "m4a"
    if head.startswith(b"ID3") or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE0 == 0xE0):
        return "mp3"
    return None


def inspect_upload(data: bytes, file_type: MediaKind, cfg: MediaConfig) -> Inspected:
    """Check an upload against `file_type` and the limits; raises a typed error naming the reason."""
    if not data:
        raise EmptyMedia("The uploaded file is empty (0 bytes).", field="file")
    limit = cfg.max_bytes[file_type]
    if len(data) > limit:
        raise MediaTooLarge(f"The {file_type} is {len(data)} bytes; the limit is {limit}.", field="file")
    fmt = sniff(data)
    accepted = cfg.image_formats if file_type == "image" else cfg.audio_formats
    if fmt is None:
        raise UnsupportedMediaType(
            f"The bytes are not a known image or audio format; accepted {file_type} formats: {', '.join(accepted)}.",
            field="file",
        )
    if KIND[fmt] != file_type:
        raise UnsupportedMediaType(
            f"file_type is '{file_type}' but the bytes are {KIND[fmt]} ({fmt}).", field="file_type"
        )
    if fmt not in accepted:
        raise UnsupportedMediaType(
            f"{fmt} is not accepted; accepted {file_type} formats: {', '.join(accepted)}.", field="file"
        )
    if file_type == "image":
        width, height = probe_image(data, cfg.max_image_pixels)
        return Inspected("image", fmt, CONTENT_TYPES[fmt], width=width, height=height)
    return Inspected(
        "audio", fmt, CONTENT_TYPES[fmt], duration_s=probe_audio(data, cfg.max_audio_s, cfg.decode_timeout_s)
    )


def probe_image(data: bytes, max_pixels: int) -> tuple[int, int]:
    """(width, height) after a full decode; the pixel cap is checked from the header first."""
    from PIL import Image

    try:
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
            if width * height > max_pixels:
                raise MediaTooLarge(
                    f"The image is {width}x{height} = {width * height} pixels; the limit is {max_pixels}.", field="file"
                )
            image.load()
    except Image.DecompressionBombError as exc:
        raise MediaTooLarge(f"The image exceeds the pixel limit ({max_pixels}).", field="file") from exc
    except MediaTooLarge:
        raise
    except Exception as exc:  # Pillow raises many types for truncated or corrupt files
        raise UndecodableMedia(f"The image does not decode: {exc}.", field="file") from exc
    if width < 1 or height < 1:
        raise UndecodableMedia("The image has no pixels.", field="file")
    return width, height


def probe_audio(data: bytes, max_s: float, timeout_s: float = DECODE_TIMEOUT_S) -> float:
    """Duration in seconds after a decode bounded by `max_s`: a container that declares a longer duration is refused
    before decoding, one that declares none (or lies) the moment its decoded audio passes the cap."""
    import av

    try:
        with av.open(io.BytesIO(data), mode="r") as container:
            if not container.streams.audio:
                raise UndecodableMedia("The file has no audio stream.", field="file")
            declared = container.duration / 1_000_000 if container.duration else None
        if declared is not None and declared > max_s:
            raise MediaTooLarge(f"The audio is {declared:.1f} s long; the limit is {max_s:g} s.", field="file")
        samples = decode_audio(data, max_s=max_s, timeout_s=timeout_s)
    except (UndecodableMedia, MediaTooLarge):
        raise
    except Exception as exc:  # av raises InvalidDataError and friends for corrupt input
        raise UndecodableMedia(f"The audio does not decode: {exc}.", field="file") from exc
    duration = len(samples) / AUDIO_RATE
    if duration <= 0:
        raise UndecodableMedia("The audio decodes to no samples.", field="file")
    return duration
