"""The HTTP API (seed 003 §6): thin routes over the turn engine and the one mapping of errors to the envelope."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Annotated, Any, Protocol

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from engine.errors import BatonError, InvalidInput, Overloaded, SessionForbidden, Starting, TextTooLong
from engine.media_errors import MediaForbidden, MediaNotFound, MediaTooLarge, MediaUnavailable, UnsupportedMediaType
from engine.turn import TurnEngine
from media.uploads import MediaUploads
from serve_app.admission import Admission
from serve_app.auth import Unauthorized
from serve_app.chat_stream import ChatStream
from serve_app.conversation_ws import conversation_router
from serve_app.demo import demo_router
from serve_app.media_api import router as media_router
from serve_app.metrics import TurnMetrics
from serve_app.openai_api import openai_router
from serve_app.openai_serving import LlmTimeout, LlmUnavailable, ModelNotFound
from serve_app.openapi_docs import TOKEN_OPTIONAL, Authorization, errors, install
from serve_app.rest_api import Persistence, store_router
from serve_app.turns import AdmissionGate, ArrivalStamp, ReplicaName, run_turn
from store.errors import Conflict, NotFound, SessionBusy, StoreUnavailable, UnsupportedWrite
from protocol.base import ErrorBody, ErrorEnvelope
from protocol.http_chat import ChatRequest, ChatResponse, ChatStreamLine, ErrorEvent, FillSlotsRequest, HealthStatus

STATUS_BY_ERROR: dict[type[BatonError], int] = {
    UnsupportedMediaType: 415,
    MediaTooLarge: 413,
    MediaNotFound: 404,
    MediaForbidden: 403,
    MediaUnavailable: 503,
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
RETRYABLE = (Overloaded, Starting, StoreUnavailable, SessionBusy, LlmUnavailable)


class Readiness(Protocol):
    """Whether the whole app answers warm: `ready`, and the `reason` while it does not."""

    ready: bool
    reason: str


@dataclass
class AlwaysReady:
    ready: bool = True
    reason: str = ""


@dataclass
class Serving:
    """What the routes need, built once per process: the engine, admission control, metrics, readiness and, in
    the served app, the store (sessions, conversation log, accounts); without it sessions stay in-process."""

    engine: TurnEngine
    admission: Admission
    metrics: TurnMetrics = field(default_factory=TurnMetrics)
    retry_after_s: int = 1
    persistence: Persistence | None = None
    uploads: MediaUploads | None = None
    readiness: Readiness = field(default_factory=AlwaysReady)
    conversation: Any = None  # the WebSocket main agent (serve_app/conversation.py); needs `persistence`
    llm: Any = None           # the Planner deployment as a LanguageModel (serve_app/llm_client.py); None: no LLM
    llm_planner: Any = None   # the LLM workflow planner over it (engine/llm/planner.py)
    llm_metrics: Any = None
    openai: Any = None        # the /v1 endpoints' logic, made at their first use (serve_app/openai_serving.py)


def error_response(status: int, code: str, message: str, field: str | None = None, headers: dict | None = None) -> JSONResponse:
    body = ErrorEnvelope(error=ErrorBody(code=code, message=message, field=field))
    return JSONResponse(body.model_dump(), status_code=status, headers=headers)


# Dependencies are `async def`: FastAPI runs a plain `def` one on a worker thread, a thread hop per request.
async def _serving(request: Request) -> Serving:
    serving = getattr(request.app.state, "serving", None)
    if serving is None:
        raise BatonError("The service is still starting.")
    return serving


ServingDep = Annotated[Serving, Depends(_serving)]


def turn_json(response: ChatResponse) -> Response:
    """The turn as JSON, serialized once by its own model (it is already valid: no second validation)."""
    return Response(content=response.model_dump_json(), media_type="application/json")


async def _arrived(request: Request) -> float:
    return getattr(request.state, "arrived", None) or time.time()


ArrivedDep = Annotated[float, Depends(_arrived)]


class NdjsonStream(StreamingResponse):
    media_type = "application/x-ndjson"


# what a turn may answer besides its reply: a refusal before anything ran (media ones for voice and image turns)
TURN_ERRORS = errors(400, 401, 403, 404, 413, 422, 503)
TURN_DOCS = {"responses": TURN_ERRORS, "openapi_extra": TOKEN_OPTIONAL}


HTTP_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def allowed_methods(request: Request) -> str:
    """The methods some route serves on this request's path (the `Allow` of a 405), asked of the route table
    itself, included routers and all."""
    def served(method: str) -> bool:
        scope = {**request.scope, "method": method}
        return any(route.matches(scope)[0] is Match.FULL for route in request.app.router.routes)

    return ", ".join(filter(served, HTTP_METHODS))


def create_api(*, replica: str | None = None) -> FastAPI:
    """The FastAPI app shared by the Serve ingress and the in-process monolith; set `app.state.serving` before serving.
    `replica` names the replica in every response's `REPLICA_HEADER`."""
    api = FastAPI(title="Baton", version="0.1.0")
    install(api)
    api.include_router(media_router)

    @api.get("/health", response_model=HealthStatus,
             responses={503: {"model": HealthStatus, "description": "Still starting; `reason` says what is missing."}})
    async def health(request: Request) -> JSONResponse:
        """200 only when every stage answers warm; 503 with the reason before that."""
        serving = getattr(request.app.state, "serving", None)
        if serving is None:
            return JSONResponse({"status": "starting", "pack": None, "reason": "the ingress is starting"}, status_code=503)
        pack = serving.engine.pack.name
        if not serving.readiness.ready:
            return JSONResponse({"status": "starting", "pack": pack, "reason": serving.readiness.reason}, status_code=503,
                                headers={"Retry-After": str(serving.retry_after_s)})
        return JSONResponse({"status": "ok", "pack": pack})

    @api.post("/api/v1/agent/chat", response_model=ChatResponse, **TURN_DOCS)
    async def chat(body: ChatRequest, serving: ServingDep, arrived: ArrivedDep, authorization: Authorization) -> Response:
        return turn_json(await run_turn(serving, "chat", body, authorization=authorization, arrived=arrived))

    @api.post("/api/v1/agent/fill-slots", response_model=ChatResponse, **TURN_DOCS)
    async def fill_slots(body: FillSlotsRequest, serving: ServingDep, arrived: ArrivedDep,
                         authorization: Authorization) -> Response:
        return turn_json(await run_turn(serving, "fill_slots", body, authorization=authorization, arrived=arrived))

    @api.post("/api/v1/agent/chat-stream", response_class=NdjsonStream, openapi_extra=TOKEN_OPTIONAL,
              responses={200: {"model": ChatStreamLine, "description": "One event per line, the last `final` or `error`."},
                         **TURN_ERRORS})
    async def chat_stream(body: ChatRequest, serving: ServingDep, arrived: ArrivedDep, authorization: Authorization) -> Response:
        """The chat turn as NDJSON events (serve_app/chat_stream.py)."""
        stream = ChatStream(lambda listener: run_turn(serving, "chat", body, authorization=authorization, arrived=arrived,
                                                      listener=listener))
        first = await stream.first()
        if isinstance(first, ErrorEvent) and stream.failure is not None:
            raise stream.failure  # refused before anything ran: the status /chat would answer
        return NdjsonStream(stream.lines(first))

    api.include_router(store_router())
    api.include_router(conversation_router(RETRYABLE))
    api.include_router(openai_router())
    api.include_router(demo_router())

    @api.exception_handler(BatonError)
    async def baton_error(request: Request, exc: BatonError) -> JSONResponse:
        status = next((s for cls, s in STATUS_BY_ERROR.items() if isinstance(exc, cls)), 503)
        serving = getattr(request.app.state, "serving", None)
        if serving is not None:
            serving.metrics.errors.labels(exc.code).inc()
        headers = {"Retry-After": str(serving.retry_after_s if serving else 1)} if isinstance(exc, RETRYABLE) else {}
        if status == 401:
            headers["WWW-Authenticate"] = "Bearer"
        return error_response(status, exc.code, exc.message, exc.field, headers or None)

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
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = allowed_methods(request)  # every route of the path, not only the first that matched it
        return error_response(exc.status_code, code, str(exc.detail), headers=headers or None)

    if replica is not None:
        api.add_middleware(ReplicaName, name=replica)
    api.add_middleware(AdmissionGate)
    api.add_middleware(ArrivalStamp)  # added last: outermost, so the stamp is the first thing a request meets

    @api.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> JSONResponse:
        return error_response(500, "internal_error", f"Unexpected {type(exc).__name__}; the turn was not applied.")

    return api
