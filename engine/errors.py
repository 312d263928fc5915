"""Typed engine errors; only the ingress maps them to HTTP status codes and the error envelope."""

from __future__ import annotations


class BatonError(Exception):
    code = "error"

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class InvalidInput(BatonError):
    code = "invalid_input"


class TextTooLong(InvalidInput):
    code = "text_too_long"


class SessionForbidden(BatonError):
    code = "session_forbidden"


class Overloaded(BatonError):
    """More turns are in flight than this replica admits; the client should retry after a pause."""

    code = "overloaded"


class Starting(BatonError):
    """This replica has not finished warming up; the client should retry after a pause."""

    code = "starting"
