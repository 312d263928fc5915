"""The HTTP API (seed 003 §6): thin routes over the turn engine and the one mapping of errors to the envelope."""
from __future__ import annotations

from typing import Annotated

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from engine.errors import BatonError, InvalidInput, SessionForbidden, TextTooLong
from engine.turn import TurnEngine
from protocol.base import ErrorBody, ErrorEnvelope
from protocol.http_chat import ChatRequest, ChatResponse, FillSlotsRequest

STATUS_BY_ERROR: dict[type[BatonError], int] = {
    TextTooLong: 422,
    InvalidInput: 422,
    SessionForbidden: 403,
}


def error_response(status: int, code: str, message: str, field: str | None = None, headers: dict | None = None) -> JSONResponse:
    body = ErrorEnvelope(error=ErrorBody(code=code, message=message, field=field))
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


def _engine(request: Request) -> TurnEngine:
    engine = getattr(request.app.state, "engine", None)
    if engine is None:
        raise BatonError("The service is still starting.")
    return engine


EngineDep = Annotated[TurnEngine, Depends(_engine)]


def create_api() -> FastAPI:
    """The FastAPI app shared by the Serve ingress and the in-process monolith; set `app.state.engine` before serving."""
    api = FastAPI(title="Baton", version="0.1.0")

    @api.get("/health")
    async def health(request: Request) -> dict:
        engine = getattr(request.app.state, "engine", None)
        return {"status": "ok" if engine else "starting", "pack": engine.pack.name if engine else None}

    @api.post("/api/v1/agent/chat", response_model=ChatResponse)
    async def chat(body: ChatRequest, engine: EngineDep) -> ChatResponse:
        return await engine.chat(body)

    @api.post("/api/v1/agent/fill-slots", response_model=ChatResponse)
    async def fill_slots(body: FillSlotsRequest, engine: EngineDep) -> ChatResponse:
        return await engine.fill_slots(body)

    @api.exception_handler(BatonError)
    async def baton_error(request: Request, exc: BatonError) -> JSONResponse:
        status = next((s for cls, s in STATUS_BY_ERROR.items() if isinstance(exc, cls)), 503)
        headers = {"Retry-After": "1"} if status == 503 else None
        return error_response(status, exc.code, exc.message, exc.field, headers)

    @api.exception_handler(RequestValidationError)
    async def invalid_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        first = exc.errors()[0] if exc.errors() else {}
        loc = [str(p) for p in first.get("loc", ()) if p != "body"]
        if first.get("type") == "json_invalid":
            return error_response(400, "invalid_json", f"Request body is not valid JSON: {first.get('ctx', {}).get('error', '')}".rstrip(": "), None)
        field = ".".join(loc) or None
        message = first.get("msg", "Invalid request.")
        code = "missing_field" if first.get("type") == "missing" else "invalid_field"
        return error_response(422, code, f"{field}: {message}" if field else message, field)

    @api.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {400: "bad_request", 404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return error_response(exc.status_code, code, str(exc.detail))

    @api.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        return error_response(500, "internal_error", f"Unexpected {type(exc).__name__}; the turn was not applied.")

    return api
