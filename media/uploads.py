"""The upload service behind POST /api/v1/media/upload and GET /api/v1/media/{object_key}: inspect, store, serve to
the owner."""

from __future__ import annotations

from functools import partial

from config.media import MediaConfig, MediaKind
from engine.media_errors import MediaForbidden, MediaNotFound
from engine.media_keys import new_key, source_url_for
from media.inspect import inspect_upload
from media.pool import DecodePool
from media.store import ObjectInfo, ObjectNotFound, ObjectStore
from protocol.media import UploadResponse


class MediaUploads:
    """`upload` checks and stores in the uploads' own pool, under its admission; the other methods block (store
    I/O): call them off the event loop."""

    def __init__(self, *, store: ObjectStore, cfg: MediaConfig) -> None:
        self.store = store
        self.cfg = cfg
        self.pool = DecodePool(workers=cfg.decode_workers, waiting=cfg.decode_waiting)

    async def upload(self, *, data: bytes, file_type: MediaKind, user_id: str) -> UploadResponse:
        """`accept` in the pool; Overloaded (503) at once when the pool is full."""
        return await self.pool.run(partial(self.accept, data=data, file_type=file_type, user_id=user_id))

    def accept(self, *, data: bytes, file_type: MediaKind, user_id: str) -> UploadResponse:
        found = inspect_upload(data, file_type, self.cfg)
        key = new_key(found.kind, found.format)
        self.store.put(key, data, owner=user_id, content_type=found.content_type)
        return UploadResponse(
            source_url=source_url_for(key, self.cfg.public_base_url),
            object_key=key,
            file_type=found.kind,
            content_type=found.content_type,
            bytes=len(data),
        )

    def read(self, *, object_key: str, user_id: str) -> tuple[ObjectInfo, bytes]:
        try:
            if self.store.head(object_key).owner != user_id:
                raise MediaForbidden(f"Media object '{object_key}' belongs to another user.", field="object_key")
            return self.store.get(object_key)
        except ObjectNotFound as exc:
            raise MediaNotFound(f"No media object '{object_key}'.", field="object_key") from exc
