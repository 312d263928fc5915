"""Object keys and the source URLs that name them: Baton serves `{public_base_url}/api/v1/media/{object_key}`."""

from __future__ import annotations

import re
import uuid

from config.media import MediaKind

MEDIA_PATH = "/api/v1/media/"
KEY_PATTERN = re.compile(r"^(image|audio)/[0-9a-f]{32}\.([a-z0-9]{2,5})$")


def new_key(kind: MediaKind, extension: str) -> str:
    return f"{kind}/{uuid.uuid4().hex}.{extension}"


def is_valid_key(key: str) -> bool:
    return bool(KEY_PATTERN.match(key))


def kind_of(key: str) -> MediaKind:
    return "image" if key.startswith("image/") else "audio"


def source_url_for(key: str, public_base_url: str = "") -> str:
    return f"{public_base_url.rstrip('/')}{MEDIA_PATH}{key}"


def key_from_source_url(url: str, public_base_url: str = "") -> str | None:
    """The object key a Baton source URL names, or None for any URL Baton did not hand out."""
    for prefix in filter(None, (MEDIA_PATH, public_base_url and source_url_for("", public_base_url))):
        if url.startswith(prefix):
            key = url[len(prefix) :]
            return key if is_valid_key(key) else None
    return None
