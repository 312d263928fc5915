"""The one mapping of failures to the wire: an HTTP status with the error envelope, or a WebSocket error event.

Everything below the ingress raises typed errors (`BatonError` and its subclasses: code, message, field); only
this module decides what a client sees. Anything untyped is `internal_error`, without its details.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from engine.calendars.model import CalendarKeyMissing, CalendarTooLarge
from engine.errors import BatonError, InvalidInput, Overloaded, SessionForbidden, Starting, TextTooLong
from engine.media_errors import MediaForbidden, MediaNotFound, MediaTooLarge, MediaUnavailable, UnsupportedMediaType
from protocol.base import ErrorBody, ErrorEnvelope
from protocol.limits import WIRE_CODES
from protocol.ws import ErrorPayload, WsEnvelope, envelope
from serve_app.auth import Unauthorized
from serve_app.http.openai.serving import LlmTimeout, LlmUnavailable, ModelNotFound
from serve_app.http.ratelimit import RateLimited
from serve_app.state import state_of
from store.errors import Conflict, NotFound, SessionBusy, StoreUnavailable, UnsupportedWrite

STATUS_BY_ERROR: dict[type[BatonError], int] = {
    UnsupportedMediaType: 415,
    MediaTooLarge: 413,
    CalendarTooLarge: 413,
    CalendarKeyMissing: 503,
    MediaNotFound: 404,
    MediaForbidden: 403,
    MediaUnavailable: 503,
    RateLimited: 429,
    TextTooLong: 422,
    InvalidInput: 422,
    UnsupportedWrite: 422,
    Unauthorized: 401,
    SessionForbidden: 403,
    NotFound: 404,
    Conflict: 409,
    Overloaded: 503,
    Starting: 503,
    StoreUnavailable: 503,
    ModelNotFound: 404,
    LlmUnavailable: 503,
    LlmTimeout: 504,
}
# errors a client should simply retry after a pause
RETRYABLE = (Overloaded, Starting, StoreUnavailable, SessionBusy, LlmUnavailable, RateLimited)
HTTP_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def status_of(exc: BatonError) -> int:
    return next((s for cls, s in STATUS_BY_ERROR.items() if isinstance(exc, cls)), 503)


def error_response(
    status: int, code: str, message: str, field: str | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    body = ErrorEnvelope(error=ErrorBody(code=code, message=message, field=field))
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


def error_event(kind: str, exc: Exception, *, retry_after_s: int, client_message_id: str | None = None) -> WsEnvelope:
    """A failure as a WebSocket event: a BatonError's code, message and field (and `retry_after_s` when retrying
    helps), anything else `internal_error` without its details."""
    if isinstance(exc, BatonError):
        payload = ErrorPayload(
            code=exc.code,
            message=exc.message,
            field=exc.field,
            retry_after_s=retry_after(exc, retry_after_s) if isinstance(exc, RETRYABLE) else None,
            client_message_id=client_message_id,
        )
    else:
        payload = ErrorPayload(
            code="internal_error",
            message=f"Unexpected {type(exc).__name__}; nothing was applied.",
            client_message_id=client_message_id,
        )
    return envelope(kind, payload)


def retry_after(exc: BatonError, default_s: int) -> int:
    """Seconds a client should wait: a rate limit's own, else the deployment's `retry_after_s`."""
    return exc.retry_after_s if isinstance(exc, RateLimited) else default_s


def allowed_methods(request: Request) -> str:
    """The methods some route serves on this request's path (the `Allow` of a 405), asked of the route table
    itself, included routers and all."""

    def served(method: str) -> bool:
        scope = {**request.scope, "method": method}
        return any(route.matches(scope)[0] is Match.FULL for route in request.app.router.routes)

    return ", ".join(filter(served, HTTP_METHODS))


async def baton_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, BatonError)
    state = state_of(request.app)
    state.metrics.errors.labels(exc.code).inc()
    headers = {"Retry-After": str(retry_after(exc, state.retry_after_s))} if isinstance(exc, RETRYABLE) else {}
    status = status_of(exc)
    if status == 401:
        headers["WWW-Authenticate"] = "Bearer"
    return error_response(status, exc.code, exc.message, exc.field, headers or None)


async def invalid_request(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    first = exc.errors()[0] if exc.errors() else {}
    loc = [str(p) for p in first.get("loc", ()) if p != "body"]
    if first.get("type") == "json_invalid":
        detail = first.get("ctx", {}).get("error", "")
        return error_response(400, "invalid_json", f"Request body is not valid JSON: {detail}".rstrip(": "), None)
    field = ".".join(loc) or None
    message = first.get("msg", "Invalid request.")
    kind = first.get("type")
    code = kind if kind in WIRE_CODES else "missing_field" if kind == "missing" else "invalid_field"
    return error_response(422, code, f"{field}: {message}" if field else message, field)


async def http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = {400: "bad_request", 404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        headers["Allow"] = allowed_methods(request)  # every route of the path, not only the first that matched it
    return error_response(exc.status_code, code, str(exc.detail), headers=headers or None)


async def unexpected(request: Request, exc: Exception) -> JSONResponse:
    return error_response(500, "internal_error", f"Unexpected {type(exc).__name__}; the turn was not applied.")


def install(api: FastAPI) -> None:
    api.add_exception_handler(BatonError, baton_error)
    api.add_exception_handler(RequestValidationError, invalid_request)
    api.add_exception_handler(StarletteHTTPException, http_error)
    api.add_exception_handler(Exception, unexpected)
