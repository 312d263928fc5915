"""What bounds one WebSocket user: the connections they hold open, the frames each connection holds queued, a
claimed `user_id`'s length and characters, and the token's lifetime (a socket closes when its token expires).

Each refusal is typed: a `dialogue.error` / `execution.error` event with its code, and, where the connection ends,
a close code with the same code as its reason (`CLOSE_CODES`).

Frame size: Ray Serve 2.60 serves the WebSocket with uvicorn built inside Serve (`start_asgi_http_server`, for its
proxy and for replicas behind HAProxy) with uvicorn's default `ws_max_size` of 16 MiB and no option to change it,
so a frame reaches Baton whole, up to 16 MiB (a bigger one is closed 1009 by uvicorn). Baton refuses a frame over
`conversation.max_frame_bytes` at its first read, before it is decoded, and then closes the connection (1009
`frame_too_large`): a client sending oversize frames costs at most one buffered frame."""

from __future__ import annotations

import time
from collections import Counter
from typing import Any
from uuid import UUID

import jwt

from engine.errors import BatonError, InvalidInput, Overloaded
from protocol.user_id import valid_user_id

FRAME_TOO_LARGE_CLOSE = 1009
UNAUTHORIZED_CLOSE = 1008
TOO_MANY_CONNECTIONS_CLOSE = 1013  # try again later
TOKEN_EXPIRED_CLOSE = 4401


class Busy(Overloaded):
    """The connection already holds its limit of frames waiting; this one was not run. Retry after a pause."""

    code = "busy"


class TooManyConnections(BatonError):
    code = "too_many_connections"


class TokenExpired(BatonError):
    code = "token_expired"


class InvalidUserId(InvalidInput):
    code = "invalid_user_id"


CLOSE_CODES: dict[str, int] = {
    "frame_too_large": FRAME_TOO_LARGE_CLOSE,
    InvalidUserId.code: UNAUTHORIZED_CLOSE,
    TooManyConnections.code: TOO_MANY_CONNECTIONS_CLOSE,
    TokenExpired.code: TOKEN_EXPIRED_CLOSE,
}


def check_user_id(claimed: str | None) -> None:
    """A claimed `user_id` (the token-less local mode) by the one rule HTTP uses too (protocol.user_id), refused
    before any database lookup."""
    if claimed is None:
        return
    try:
        valid_user_id(claimed)
    except ValueError as exc:
        raise InvalidUserId(f"{exc}.", field="user_id") from exc


def token_expiry(authorization: str | None) -> float | None:
    """When the bearer token of an authenticated connection expires (its `exp`, epoch seconds); None without a
    token. Read after the token was verified, so its signature is not checked again here."""
    if authorization is None:
        return None
    _, _, token = authorization.partition(" ")
    claims: dict[str, Any] = jwt.decode(token.strip(), options={"verify_signature": False})
    return float(claims["exp"])


def expired(expires_at: float | None) -> bool:
    return expires_at is not None and time.time() >= expires_at


class UserConnections:
    """The WebSocket connections each user holds open on this replica."""

    def __init__(self) -> None:
        self._open: Counter[UUID] = Counter()

    def enter(self, user: UUID, limit: int) -> bool:
        """Count one more connection of `user`; False (nothing counted) when they hold `limit` already."""
        if self._open[user] >= limit:
            return False
        self._open[user] += 1
        return True

    def leave(self, user: UUID) -> None:
        self._open[user] -= 1
        if self._open[user] <= 0:
            del self._open[user]

    def held(self, user: UUID) -> int:
        return self._open[user]
