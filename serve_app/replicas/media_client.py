"""MediaClient over the ASR/OCR DeploymentHandles: only the object key crosses the hop, never the bytes."""

from __future__ import annotations

import asyncio

from ray.serve.handle import DeploymentHandle

from engine.media import MediaClient
from engine.model_client import StageError
from protocol.media import Recognition


class HandleMedia(MediaClient):
    def __init__(self, *, asr: DeploymentHandle, ocr: DeploymentHandle) -> None:
        self._handles = {"asr": asr, "ocr": ocr}

    async def _call(self, stage: str, object_key: str, user_id: str, deadline: float) -> Recognition:
        response = self._handles[stage].remote((object_key, user_id), deadline)
        try:
            return await response
        except asyncio.CancelledError:
            response.cancel()  # the stage's budget ran out: stop the work in the replica
            raise
        except Exception as exc:  # replica error, back-pressure or unavailability
            raise StageError(stage, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc

    async def transcribe(self, object_key: str, *, user_id: str, deadline: float) -> Recognition:
        return await self._call("asr", object_key, user_id, deadline)

    async def ocr(self, object_key: str, *, user_id: str, deadline: float) -> Recognition:
        return await self._call("ocr", object_key, user_id, deadline)
