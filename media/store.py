"""The object store behind a small interface: a local folder (default) or an S3-compatible bucket, chosen by config."""

from __future__ import annotations

import abc
import json
import os
import tempfile
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from config.settings import Settings
from engine.media_keys import is_valid_key


class ObjectNotFound(Exception):
    pass


@dataclass(frozen=True)
class ObjectInfo:
    key: str
    owner: str
    content_type: str
    size: int


class ObjectStore(abc.ABC):
    """Blocking calls (run them off the event loop). Keys are validated by `engine.media_keys`; owners are user ids."""

    @abc.abstractmethod
    def put(self, key: str, data: bytes, *, owner: str, content_type: str) -> ObjectInfo: ...

    @abc.abstractmethod
    def head(self, key: str) -> ObjectInfo:
        """The object's metadata; raises ObjectNotFound."""

    @abc.abstractmethod
    def get(self, key: str) -> tuple[ObjectInfo, bytes]:
        """Metadata and bytes; raises ObjectNotFound."""

    @staticmethod
    def _checked(key: str) -> str:
        if not is_valid_key(key):
            raise ObjectNotFound(f"'{key}' is not a media object key.")
        return key


class LocalStore(ObjectStore):
    """Files under one folder: the bytes at `<root>/<key>` and their metadata at `<root>/<key>.meta.json`."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def _paths(self, key: str) -> tuple[Path, Path]:
        path = self.root / self._checked(key)
        return path, path.with_name(path.name + ".meta.json")

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        fd, tmp = tempfile.mkstemp(prefix=".part-", dir=path.parent)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)

    def put(self, key: str, data: bytes, *, owner: str, content_type: str) -> ObjectInfo:
        path, meta = self._paths(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        info = ObjectInfo(key=key, owner=owner, content_type=content_type, size=len(data))
        self._write(path, data)
        self._write(
            meta, json.dumps(asdict(info), ensure_ascii=False).encode()
        )  # metadata last: it marks the object complete
        return info

    def head(self, key: str) -> ObjectInfo:
        _, meta = self._paths(key)
        try:
            return ObjectInfo(**json.loads(meta.read_text(encoding="utf-8")))
        except FileNotFoundError as exc:
            raise ObjectNotFound(key) from exc

    def get(self, key: str) -> tuple[ObjectInfo, bytes]:
        info = self.head(key)
        path, _ = self._paths(key)
        try:
            return info, path.read_bytes()
        except FileNotFoundError as exc:
            raise ObjectNotFound(key) from exc


class S3Store(ObjectStore):
    """An S3-compatible bucket (AWS, MinIO, Ceph...); the owner travels as URL-quoted object metadata."""

    def __init__(
        self, *, bucket: str, prefix: str = "", endpoint_url: str = "", region: str = "us-east-1", client: Any = None
    ) -> None:
        if client is None:
            import boto3

            client = boto3.client("s3", endpoint_url=endpoint_url or None, region_name=region)
        self._s3 = client
        self._bucket = bucket
        self._prefix = prefix

    def _name(self, key: str) -> str:
        return self._prefix + self._checked(key)

    def put(self, key: str, data: bytes, *, owner: str, content_type: str) -> ObjectInfo:
        self._s3.put_object(
            Bucket=self._bucket,
            Key=self._name(key),
            Body=data,
            ContentType=content_type,
            Metadata={"owner": quote(owner, safe="")},
        )
        return ObjectInfo(key=key, owner=owner, content_type=content_type, size=len(data))

    def _info(self, key: str, meta: dict[str, Any]) -> ObjectInfo:
        return ObjectInfo(
            key=key,
            owner=unquote(meta.get("Metadata", {}).get("owner", "")),
            content_type=meta.get("ContentType", "application/octet-stream"),
            size=int(meta.get("ContentLength", 0)),
        )

    def _missing(self, exc: Exception) -> bool:
        code = getattr(exc, "response", {}).get("Error", {}).get("Code", "")
        return code in ("404", "NoSuchKey", "NotFound")

    def head(self, key: str) -> ObjectInfo:
        try:
            return self._info(key, self._s3.head_object(Bucket=self._bucket, Key=self._name(key)))
        except self._s3.exceptions.ClientError as exc:
            if self._missing(exc):
                raise ObjectNotFound(key) from exc
            raise

    def get(self, key: str) -> tuple[ObjectInfo, bytes]:
        try:
            answer = self._s3.get_object(Bucket=self._bucket, Key=self._name(key))
        except self._s3.exceptions.ClientError as exc:
            if self._missing(exc):
                raise ObjectNotFound(key) from exc
            raise
        return self._info(key, answer), answer["Body"].read()


BACKENDS: dict[str, Callable[[Settings], ObjectStore]] = {
    "local": lambda s: LocalStore(s.media_dir),
    "s3": lambda s: S3Store(
        bucket=s.media.object_store.s3.bucket,
        prefix=s.media.object_store.s3.prefix,
        endpoint_url=s.media.object_store.s3.endpoint_url,
        region=s.media.object_store.s3.region,
    ),
}


def build_store(settings: Settings) -> ObjectStore:
    """The backend named by `media.object_store.backend`."""
    return BACKENDS[settings.media.object_store.backend](settings)
