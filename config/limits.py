"""The `limits:` section: how much a client may send before anything reads it (request bodies, JSON nesting) and
how much one WebSocket user may hold open (connections, queued frames)."""

from __future__ import annotations

from pydantic import Field

from config.base import Section


class LimitsConfig(Section):
    max_body_bytes: int = Field(
        gt=0,
        description="A request body over this many bytes is refused with 413 before it is read (by Content-Length, "
        "or as its chunks arrive); media uploads keep their own per-kind limit (media.max_bytes).",
    )
    max_json_depth: int = Field(
        ge=2,
        le=200,
        description="A JSON body or WebSocket frame nesting arrays and objects deeper than this is refused (400 / "
        "`dialogue.error` json_too_deep) before it is parsed.",
    )
    ws_connections_per_user: int = Field(
        gt=0, description="WebSocket connections one user may hold open at once, per ingress replica."
    )
    ws_queued_frames: int = Field(
        gt=0,
        description="Frames one WebSocket connection may have waiting behind the one running; one more is refused "
        "with `dialogue.error` busy.",
    )
