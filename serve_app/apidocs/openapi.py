"""The OpenAPI document, true to the wire: the error envelope under each error status a route answers, the bearer
scheme (and the local, token-less mode beside it), and the limits that come from the settings.

Routes take `responses=errors(...)` with the statuses they really answer; naming 422 there also keeps FastAPI from
documenting its own validation-error schema, which Baton never sends (serve_app/errors.py answers with the envelope).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Depends, FastAPI, Request
from fastapi.openapi.utils import get_openapi
from fastapi.security import APIKeyHeader, APIKeyQuery, HTTPBearer
from pydantic import BaseModel

from config.media import MediaKind
from protocol.base import ErrorEnvelope
from protocol.media import source_url_pattern
from protocol.rest import ProfilePayload
from protocol.strings import NO_NUL
from serve_app.state import AppState, state_of
from store import appliers, write_gate

LOCAL_MODE = (
    "Local mode: without a token a caller names itself instead, by `user_id` in the body of a turn or an "
    "upload, and by the `user_id` query parameter or the `X-User-Id` header when reading media."
)

ERROR_DESCRIPTIONS: dict[int, str] = {
    400: (
        "The body is not valid JSON (`invalid_json`), nests deeper than `limits.max_json_depth` (`json_too_deep`) or "
        "is not a readable multipart form (`bad_request`)."
    ),
    401: (
        "The bearer token is missing, malformed, expired or forged, or the email and password do not match "
        "(`unauthorized`)."
    ),
    403: "The session, media object or claimed `user_id` belongs to another user.",
    404: "No such resource; another user's ids answer 404 exactly as missing ones do.",
    409: "The request contradicts the stored state (`code` says which rule: `email_taken`, `already_decided`, ...).",
    413: (
        "The body is over `limits.max_body_bytes` (`body_too_large`), or an upload's file over the size limit of its "
        "kind (`media_too_large`), or a calendar file or feed over its limit (`calendar_too_large`)."
    ),
    415: "The file is not an image or audio format Baton reads (`unsupported_media_type`).",
    422: (
        "A field breaks the schema or a rule of the endpoint; `field` names it (`invalid_field`, `missing_field`, "
        "`invalid_input`, ...)."
    ),
    429: (
        "Too many requests from this address or for this account, or too many at once (`rate_limited`); "
        "`Retry-After` says after how many seconds."
    ),
    504: "The language model did not finish within the request's time limit; the request was aborted (`llm_timeout`).",
    503: (
        "Retry later: the replica is overloaded or still starting, or the store or a media stage is unavailable; "
        "`Retry-After` says after how many seconds when it is a matter of waiting."
    ),
}
ERROR_HEADERS: dict[int, dict[str, Any]] = {
    401: {"WWW-Authenticate": {"description": "`Bearer`.", "schema": {"type": "string"}}},
    429: {"Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer"}}},
    503: {"Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer"}}},
}


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """A route's `responses=`: each error status it answers, with the envelope, what it means and its headers."""
    return {
        status: {
            "model": ErrorEnvelope,
            "description": ERROR_DESCRIPTIONS[status],
            **({"headers": ERROR_HEADERS[status]} if status in ERROR_HEADERS else {}),
        }
        for status in sorted(statuses)
    }


class BearerHeader(HTTPBearer):
    """The bearer scheme in the document. The route gets the `Authorization` header as sent (None when absent):
    serve_app.auth.bearer_token judges it, so a malformed header is a 401, never a silently token-less request."""

    async def __call__(self, request: Request) -> str | None:  # type: ignore[override]
        return request.headers.get("authorization")


BEARER = BearerHeader(
    scheme_name="bearerAuth",
    bearerFormat="JWT",
    description=(
        "`Authorization: Bearer <access_token>` from POST /api/v1/auth/register or /api/v1/auth/login. " + LOCAL_MODE
    ),
)
Authorization = Annotated[str | None, Depends(BEARER)]
# Appended by FastAPI to the route's own requirement (the bearer scheme): the token is optional, local mode works too.
TOKEN_OPTIONAL: dict[str, Any] = {"security": [{}]}
# Reading media: a token, or (local mode) the owner named in the query or a header; one of them is needed.
LocalUserQuery = Annotated[
    str | None,
    Depends(
        APIKeyQuery(
            name="user_id",
            scheme_name="localUserId",
            auto_error=False,
            description="Local mode: the owner, as a query parameter.",
        )
    ),
]
LocalUserHeader = Annotated[
    str | None,
    Depends(
        APIKeyHeader(
            name="X-User-Id",
            scheme_name="localUserHeader",
            auto_error=False,
            description="Local mode: the owner, as a header.",
        )
    ),
]


def install(api: FastAPI) -> None:
    """Serve `api`'s document with the limits of the settings it runs with (the longest turn text, the `source_url`
    form under a configured `public_base_url`, tokens required or not), known once its state is attached; cached from
    then on, built afresh on each call before."""

    def openapi() -> dict[str, Any]:
        if api.openapi_schema is not None:
            return api.openapi_schema
        schema = get_openapi(
            title=api.title,
            version=api.version,
            openapi_version=api.openapi_version,
            description=api.description,
            routes=api.routes,
        )
        _errors_are_json(schema)
        _bodies_are_bounded(schema)
        _write_request_rules(schema["components"]["schemas"])
        try:
            state = state_of(api)
        except AttributeError:  # not attached yet: the document without the settings' limits
            return schema
        _live_limits(schema, state)
        api.openapi_schema = schema
        return schema

    api.openapi = openapi  # type: ignore[method-assign]


def _errors_are_json(schema: dict[str, Any]) -> None:
    # For a route whose success body is not JSON (the NDJSON chat stream) FastAPI files every response model under
    # that media type, with its `type: string` placeholder beside the model; the envelope is JSON all the same.
    for operation in (op for path in schema["paths"].values() for op in path.values()):
        for status, response in operation["responses"].items():
            content = response.get("content", {})
            for media in content.values():
                if "$ref" in media.get("schema", {}):
                    media["schema"].pop("type", None)
            if status.startswith(("4", "5")) and "application/json" not in content and len(content) == 1:
                response["content"] = {"application/json": content.popitem()[1]}


def _bodies_are_bounded(schema: dict[str, Any]) -> None:
    # serve_app.http.limits refuses an oversize or too deeply nested body before any route reads it
    for operation in (op for path in schema["paths"].values() for op in path.values()):
        if "requestBody" in operation:
            for status in (400, 413):
                operation["responses"].setdefault(
                    str(status),
                    {
                        "description": ERROR_DESCRIPTIONS[status],
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorEnvelope"}}},
                    },
                )


def _write_request_rules(components: dict[str, Any]) -> None:
    # WriteRequestCreate's payload is free-form to the model; the write gate takes only certain (action, target_type)
    # pairs, each with its own payload and target_id rule: stated from the gate's own tables.
    def ref(model: type[BaseModel]) -> dict[str, str]:
        schema = model.model_json_schema(ref_template="#/components/schemas/{model}")
        for name, definition in {**schema.pop("$defs", {}), model.__name__: schema}.items():
            components.setdefault(name, _nul_free(definition))
        return {"$ref": f"#/components/schemas/{model.__name__}"}

    no_target = {"target_id": {"type": "null"}}
    branches = []
    for action, target in sorted(write_gate.SUPPORTED):
        properties: dict[str, Any] = {"action": {"const": action}, "target_type": {"const": target}}
        required = ["action", "target_type"]
        if (action, target) in appliers.AGENT_WRITES:  # these name their rows and versions in the payload
            properties |= {
                **no_target,
                "base_version": {"type": "null"},
                "payload": ref(appliers.AGENT_WRITES[action, target].payload),
            }
        elif action == "create":
            properties |= {**no_target, "payload": ref(write_gate.TABLES[target].payload)}
        else:
            required.append("target_id")
            properties["target_id"] = {"type": "string", "format": "uuid"}
            if target == "profile":
                properties["payload"] = ref(ProfilePayload)
            elif action == "update":  # some of the row's fields, none other
                table = write_gate.TABLES[target].payload
                ref(table)
                properties["payload"] = {
                    "type": "object",
                    "properties": components[table.__name__]["properties"],
                    "additionalProperties": False,
                    "minProperties": 1,
                }
            else:
                properties["payload"] = {"type": "object", "maxProperties": 0}
        branches.append({"properties": properties, "required": required})
    components["WriteRequestCreate"]["anyOf"] = branches


def _nul_free(schema: Any) -> Any:
    # the payload models of the sub-agents' writes leave their strings plain; WriteRequestCreate refuses a NUL anywhere
    if isinstance(schema, dict):
        if schema.get("type") == "string" and not schema.keys() & {"pattern", "format", "enum", "const"}:
            schema["pattern"] = NO_NUL
        for value in schema.values():
            _nul_free(value)
    elif isinstance(schema, list):
        for value in schema:
            _nul_free(value)
    return schema


def _live_limits(schema: dict[str, Any], state: AppState) -> None:
    components = schema["components"]["schemas"]
    settings = state.settings
    if "ChatCompletionRequest" in components:
        for name in ("max_tokens", "max_completion_tokens"):
            for branch in components["ChatCompletionRequest"]["properties"][name].get("anyOf", []):
                if branch.get("type") == "integer":
                    branch["maximum"] = settings.llm.max_request_tokens
    if settings.auth.require_token:
        _tokens_required(schema)
    for name in ("ChatRequest", "FillSlotsRequest"):
        for branch in components[name]["properties"]["text"]["anyOf"]:
            if branch.get("type") == "string":
                branch["maxLength"] = settings.max_text_chars
    public_base_url = settings.media.public_base_url
    if public_base_url:
        for branch in components["ChatRequest"]["anyOf"]:
            source_url = branch["properties"]["source_url"]
            if "pattern" in source_url:
                kind: MediaKind = "audio" if branch["properties"]["modality"]["const"] == "voice_asr" else "image"
                source_url["pattern"] = source_url_pattern(kind, public_base_url)


def _tokens_required(schema: dict[str, Any]) -> None:
    # auth.require_token: no local mode, so a route that took a token or a named local user takes the token only
    for path, operations in schema["paths"].items():
        for operation in operations.values():
            # the OpenAI-compatible routes read no account in the local mode; here the api_key must be a token
            if len(operation.get("security", [])) > 1 or path.startswith("/v1/"):
                operation["security"] = [{BEARER.scheme_name: []}]
    schemes = schema["components"]["securitySchemes"]
    schemes[BEARER.scheme_name]["description"] = schemes[BEARER.scheme_name]["description"].replace(
        " " + LOCAL_MODE, ""
    )
    for local in ("localUserId", "localUserHeader"):
        schemes.pop(local, None)
