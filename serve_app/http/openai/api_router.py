"""Thin routes of the OpenAI-compatible API: `GET /v1/models`, `POST /v1/chat/completions` (logic in `serving`).

Every request spends a token of its client address's bucket, and completions run at most
`rate_limits.openai_max_in_flight` at once per replica (429 beyond): external clients share the language model with
the turns' planner and must not starve it."""

from __future__ import annotations

import weakref
from collections.abc import AsyncIterator, Callable
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response, StreamingResponse

from protocol.openai import ChatCompletion, ChatCompletionRequest, ModelList
from serve_app.apidocs.openapi import errors
from serve_app.http.deps import StateDep
from serve_app.http.openai.serving import OpenAiServing


class EventStream(StreamingResponse):
    media_type = "text/event-stream"


async def openai_serving(state: StateDep, request: Request) -> OpenAiServing:
    """The endpoints' logic, for a caller the deployment lets in (`Callers.check_api_key`: the header is read here,
    not declared, since in the local mode the api_key is no Baton account)."""
    state.limits.openai_request(state.limits.ip_of(request.scope))
    if state.store is not None:
        await state.store.callers.check_api_key(request.headers.get("authorization"))
    return state.openai


OpenAiDep = Annotated[OpenAiServing, Depends(openai_serving)]
router = APIRouter(tags=["openai"])


@router.get("/v1/models", response_model=ModelList, responses=errors(401, 429))
async def models(openai: OpenAiDep) -> ModelList:
    """The language model this app serves (none when it deploys no Planner)."""
    return openai.models()


@router.post(
    "/v1/chat/completions",
    response_model=ChatCompletion,
    response_class=Response,
    responses={
        200: {
            "content": {"text/event-stream": {}},
            "description": "The completion, or with `stream: true` its chunks as server-sent events.",
        },
        **errors(400, 401, 404, 422, 429, 503, 504),
    },
)
async def chat_completions(body: ChatCompletionRequest, openai: OpenAiDep, state: StateDep) -> Response:
    """A chat completion from the Planner's model; `response_format` json_schema constrains the answer to it."""
    lm_request = openai.request(body)
    release = state.limits.openai.take_now()  # 429 when the external completions' slots are all taken
    if body.stream:
        stream = _releasing(openai.stream(lm_request, body.model), release)
        weakref.finalize(stream, release)  # a stream never iterated (the client left first) still lets go
        return EventStream(stream)
    try:
        completion = await openai.complete(lm_request, body.model)
    finally:
        release()
    return Response(content=completion.model_dump_json(), media_type="application/json")


async def _releasing(events: AsyncIterator[str], release: Callable[[], None]) -> AsyncIterator[str]:
    try:
        async for event in events:
            yield event
    finally:
        release()
