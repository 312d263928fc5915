"""Media routes (seed 002): POST /api/v1/media/upload (multipart: file, file_type, user_id) and
GET /api/v1/media/{object_key} (an object key is `{kind}/{file_name}`)."""

from __future__ import annotations

import asyncio
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request, Response
from pydantic import Field, ValidationError
from starlette.datastructures import UploadFile
from starlette.types import Message

from engine.errors import BatonError, InvalidInput
from engine.media_errors import MediaForbidden, MediaNotFound, MediaTooLarge
from media.uploads import MediaUploads
from protocol.base import WireModel
from protocol.media import OBJECT_FILE_NAME, FileType, UploadResponse
from protocol.strings import NO_NUL, PlainStr
from serve_app.apidocs.openapi import TOKEN_OPTIONAL, Authorization, LocalUserHeader, LocalUserQuery, errors
from serve_app.http.deps import StateDep
from serve_app.state import AppState
from store.errors import NotFound

FORM_FIELDS = ("file", "file_type", "user_id")
# multipart framing around the file: boundaries, part headers and the two small fields
FORM_OVERHEAD_BYTES = 64 * 1024

router = APIRouter()


class UploadFields(WireModel):
    user_id: PlainStr | None = Field(default=None, min_length=1, max_length=128)
    file_type: FileType


UPLOAD_FORM = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file", "file_type"],
                    "additionalProperties": False,
                    "properties": {
                        "file": {
                            "type": "string",
                            "format": "binary",
                            "description": (
                                "The image (PNG, JPEG, WebP, ...) or audio (WAV, MP3, ...) file; it must decode."
                            ),
                        },
                        "file_type": {"type": "string", "enum": ["image", "audio"]},
                        "user_id": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": 128,
                            "pattern": NO_NUL,
                            "description": (
                                "Local mode (no token): the owner. With a token, absent or the token's user."
                            ),
                        },
                    },
                }
            }
        },
    }
}


async def requesting_user(
    state: AppState, authorization: str | None, claimed: str | None, *, create: bool = True
) -> str:
    """Who uploads or reads a media object, by the same rule as chat: the account's UUID (the token's user, or in
    local mode the claimed user_id's shadow account, made by an upload but never by a read: `create`). Without a
    database (the in-process path) only the claimed user_id exists."""
    if claimed is not None and "\x00" in claimed:  # the query parameter, unlike the form field, is not a model's
        raise InvalidInput("user_id must not contain the NUL character (U+0000).", field="user_id")
    if state.store is not None:
        _, key = await state.store.callers.of_turn(authorization, claimed, create=create)
        return key
    if not claimed:
        raise InvalidInput("Give the owner's user_id (query parameter or X-User-Id header).", field="user_id")
    return claimed


async def _uploads(state: StateDep) -> MediaUploads:
    if state.uploads is None:
        raise BatonError("The media store is not available yet.")
    return state.uploads


UploadsDep = Annotated[MediaUploads, Depends(_uploads)]


def capped_body(request: Request, limit: int) -> Request:
    """The same request whose body raises MediaTooLarge the moment more than `limit` + the form's framing has arrived:
    a chunked upload (no Content-Length) is cut off when it crosses the limit, never read whole and then refused."""
    cap, received, receive = limit + FORM_OVERHEAD_BYTES, 0, request.receive

    async def counted() -> Message:
        nonlocal received
        message = await receive()
        if message["type"] == "http.request":
            received += len(message.get("body", b""))
            if received > cap:
                raise MediaTooLarge(f"The upload passed {cap} bytes; a file may be at most {limit}.", field="file")
        return message

    return Request(request.scope, counted)


async def _form_fields(request: Request, uploads: MediaUploads) -> tuple[UploadFields, UploadFile]:
    declared = request.headers.get("content-length")
    limit = max(uploads.cfg.max_bytes.values())
    if declared and declared.isdigit() and int(declared) > limit + FORM_OVERHEAD_BYTES:
        raise MediaTooLarge(f"The request is {declared} bytes; a file may be at most {limit}.", field="file")
    form = await capped_body(request, limit).form(max_files=1, max_fields=len(FORM_FIELDS))
    extra = sorted(set(form.keys()) - set(FORM_FIELDS))
    if extra:
        raise InvalidInput(f"Unknown form field '{extra[0]}'; expected {', '.join(FORM_FIELDS)}.", field=extra[0])
    file = form.get("file")
    if not isinstance(file, UploadFile):
        raise InvalidInput("Form field 'file' is required and must be a file part.", field="file")
    try:
        fields = UploadFields.model_validate(
            {k: form.get(k) for k in ("user_id", "file_type") if form.get(k) is not None}
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        name = ".".join(str(p) for p in first["loc"]) or None
        raise InvalidInput(f"{name}: {first['msg']}", field=name) from exc
    return fields, file


@router.post(
    "/api/v1/media/upload",
    response_model=UploadResponse,
    openapi_extra={**UPLOAD_FORM, **TOKEN_OPTIONAL},
    responses=errors(400, 401, 403, 413, 415, 422, 429, 503),
)
async def upload(
    request: Request, state: StateDep, uploads: UploadsDep, authorization: Authorization
) -> UploadResponse:
    state.limits.upload(state.limits.ip_of(request.scope))
    fields, file = await _form_fields(request, uploads)
    limit = uploads.cfg.max_bytes[fields.file_type]
    data = await file.read(limit + 1)
    if len(data) > limit:
        raise MediaTooLarge(f"The {fields.file_type} is over the limit of {limit} bytes.", field="file")
    owner = await requesting_user(state, authorization, fields.user_id)
    # decoding to check the bytes is CPU work: in the uploads' own bounded pool, off the ingress event loop
    return await uploads.upload(data=data, file_type=fields.file_type, user_id=owner)


MEDIA_BYTES = {"schema": {"type": "string", "format": "binary"}}


# An object key is `{kind}/{file_name}`; two path parameters say so (one may not hold a '/'), and /api/v1/media/upload
# is then only POST's.
@router.get(
    "/api/v1/media/{kind}/{file_name}",
    response_class=Response,
    responses={
        200: {
            "description": "The object's bytes, as uploaded.",
            "content": {"image/*": MEDIA_BYTES, "audio/*": MEDIA_BYTES},
        },
        **errors(401, 404, 422, 503),
    },
)
async def media_object(
    kind: FileType,
    file_name: Annotated[str, Path(pattern=f"^{OBJECT_FILE_NAME}$")],
    state: StateDep,
    uploads: UploadsDep,
    authorization: Authorization,
    user_id: LocalUserQuery,
    x_user_id: LocalUserHeader,
) -> Response:
    """The object `{kind}/{file_name}` (an upload's `object_key`). Only its owner reads it: a token's user or, in
    local mode, the `user_id` query parameter or the `X-User-Id` header; with none of them, 422. Another user's
    object answers 404 exactly as a missing one does."""
    object_key = f"{kind}/{file_name}"
    missing = MediaNotFound(f"No media object '{object_key}'.", field="object_key")
    try:
        owner = await requesting_user(state, authorization, user_id or x_user_id, create=False)
        info, data = await asyncio.to_thread(uploads.read, object_key=object_key, user_id=owner)
    except (MediaForbidden, NotFound) as exc:
        raise missing from exc
    return Response(
        content=data,
        media_type=info.content_type,
        headers={"Cache-Control": "private, no-store", "X-Content-Type-Options": "nosniff"},
    )
