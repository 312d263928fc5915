"""Thin routes of the OpenAI-compatible API: `GET /v1/models`, `POST /v1/chat/completions` (serve_app/openai_serving.py)."""
from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response, StreamingResponse

from engine.errors import BatonError
from protocol.openai import ChatCompletion, ChatCompletionRequest, ModelList
from serve_app.auth import Unauthorized, bearer_token
from serve_app.openai_serving import OpenAiServing
from serve_app.openapi_docs import errors


class EventStream(StreamingResponse):
    media_type = "text/event-stream"


def _openai(request: Request) -> OpenAiServing:
    """The endpoints' logic. With auth.require_token the caller's api_key must be a valid access token; in the local
    mode it is not a Baton account and is not read."""
    serving = getattr(request.app.state, "serving", None)
    if serving is None:
        raise BatonError("The service is still starting.")
    persistence = serving.persistence
    if persistence is not None and persistence.settings.auth.require_token:
        token = bearer_token(request.headers.get("authorization"))
        if token is None:
            raise Unauthorized("This deployment needs 'Authorization: Bearer <access_token>' (auth.require_token).")
        persistence.auth.verify(token)
    if getattr(serving, "openai", None) is None:
        llm = serving.llm.for_route("openai") if serving.llm is not None else None
        serving.openai = OpenAiServing(llm, serving.engine.settings.llm)
    return serving.openai


def openai_router() -> APIRouter:
    router = APIRouter(tags=["openai"])

    @router.get("/v1/models", response_model=ModelList, responses=errors(401))
    async def models(request: Request) -> ModelList:
        """The language model this app serves (none when it deploys no Planner)."""
        return _openai(request).models()

    @router.post("/v1/chat/completions", response_model=ChatCompletion, response_class=Response,
                 responses={200: {"content": {"text/event-stream": {}},
                                  "description": "The completion, or with `stream: true` its chunks as server-sent events."},
                            **errors(400, 401, 404, 422, 503, 504)})
    async def chat_completions(body: ChatCompletionRequest, request: Request) -> Response:
        """A chat completion from the Planner's model; `response_format` json_schema constrains the answer to it."""
        openai = _openai(request)
        lm_request = openai.request(body)
        if body.stream:
            return EventStream(openai.stream(lm_request, body.model))
        completion = await openai.complete(lm_request, body.model)
        return Response(content=completion.model_dump_json(), media_type="application/json")

    return router
