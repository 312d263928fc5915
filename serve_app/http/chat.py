"""The turn routes (seed 003 §6): chat, fill-slots and chat-stream over the one turn runner, and /health."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse, Response, StreamingResponse

from protocol.chat_stream import ChatStreamLine, ErrorEvent
from protocol.http_chat import ChatRequest, ChatResponse, FillSlotsRequest, HealthStatus
from serve_app.apidocs.openapi import TOKEN_OPTIONAL, Authorization, errors
from serve_app.http.chat_stream import ChatStream
from serve_app.http.deps import ArrivedDep, StateDep

router = APIRouter()
# what a turn may answer besides its reply: a refusal before anything ran (media ones for voice and image turns)
TURN_ERRORS = errors(400, 401, 403, 404, 413, 422, 503)


class NdjsonStream(StreamingResponse):
    media_type = "application/x-ndjson"


def turn_json(response: ChatResponse) -> Response:
    """The turn as JSON, serialized once by its own model (it is already valid: no second validation)."""
    return Response(content=response.model_dump_json(), media_type="application/json")


@router.get(
    "/health",
    response_model=HealthStatus,
    responses={503: {"model": HealthStatus, "description": "Still starting; `reason` says what is missing."}},
)
async def health(state: StateDep) -> JSONResponse:
    """200 once every stage has answered (`reason` then names what runs degraded); 503 with the reason before."""
    pack = state.engine.pack.name
    if not state.readiness.ready:
        return JSONResponse(
            {"status": "starting", "pack": pack, "reason": state.readiness.reason},
            status_code=503,
            headers={"Retry-After": str(state.retry_after_s)},
        )
    degraded = {"reason": state.readiness.reason} if state.readiness.degraded else {}
    return JSONResponse({"status": "ok", "pack": pack, **degraded})


@router.post("/api/v1/agent/chat", response_model=ChatResponse, responses=TURN_ERRORS, openapi_extra=TOKEN_OPTIONAL)
async def chat(body: ChatRequest, state: StateDep, arrived: ArrivedDep, authorization: Authorization) -> Response:
    turns = state.agent_chat or state.turns  # on a pack with agents, the main agent carries the turn
    return turn_json(await turns.chat(body, authorization=authorization, arrived=arrived))


@router.post(
    "/api/v1/agent/fill-slots", response_model=ChatResponse, responses=TURN_ERRORS, openapi_extra=TOKEN_OPTIONAL
)
async def fill_slots(
    body: FillSlotsRequest, state: StateDep, arrived: ArrivedDep, authorization: Authorization
) -> Response:
    turns = state.agent_chat or state.turns
    return turn_json(await turns.fill_slots(body, authorization=authorization, arrived=arrived))


@router.post(
    "/api/v1/agent/chat-stream",
    response_class=NdjsonStream,
    openapi_extra=TOKEN_OPTIONAL,
    responses={
        200: {"model": ChatStreamLine, "description": "One event per line, the last `final` or `error`."},
        **TURN_ERRORS,
    },
)
async def chat_stream(
    body: ChatRequest, state: StateDep, arrived: ArrivedDep, authorization: Authorization
) -> Response:
    """The chat turn as NDJSON events (serve_app/http/chat_stream.py)."""
    turns = state.agent_chat or state.turns
    stream = ChatStream(
        lambda listener: turns.chat(body, authorization=authorization, arrived=arrived, listener=listener)
    )
    first = await stream.first()
    if isinstance(first, ErrorEvent) and stream.failure is not None:
        raise stream.failure  # refused before anything ran: the status /chat would answer
    return NdjsonStream(stream.lines(first))
