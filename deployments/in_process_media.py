"""In-process implementation of the engine's MediaClient: the ASR/OCR recognizers on worker threads (the monolith
path)."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from config.settings import Settings
from deployments.faults import FaultSet
from deployments.media_source import StoredMediaRecognizer, build_media_recognizer
from engine.media import MediaClient
from engine.model_client import StageError
from media.store import ObjectStore
from protocol.media import Recognition


class InProcessMedia(MediaClient):
    def __init__(
        self,
        settings: Settings,
        *,
        store: ObjectStore | None = None,
        faults: FaultSet | None = None,
        stages: tuple[str, ...] = ("asr", "ocr"),
    ) -> None:
        self._recognizers: dict[str, StoredMediaRecognizer] = {
            s: build_media_recognizer(s, settings, store) for s in stages
        }
        self._faults = faults or FaultSet()
        self._pool = ThreadPoolExecutor(max_workers=len(stages) or 1, thread_name_prefix="baton-media")

    async def _run(self, stage: str, object_key: str, user_id: str) -> Recognition:
        if stage not in self._recognizers:
            raise StageError(stage, "this process loaded no recognizer for it")
        try:
            await self._faults.apply(stage)
            return await asyncio.get_running_loop().run_in_executor(
                self._pool, self._recognizers[stage].recognize, object_key, user_id
            )
        except Exception as exc:  # a recognizer failure is a failed stage, reported as such
            raise StageError(stage, repr(exc)) from exc

    async def transcribe(self, object_key: str, *, user_id: str, deadline: float) -> Recognition:
        return await self._run("asr", object_key, user_id)

    async def ocr(self, object_key: str, *, user_id: str, deadline: float) -> Recognition:
        return await self._run("ocr", object_key, user_id)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
