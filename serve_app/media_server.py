"""Replica body of the ASR and OCR deployments: reads the object by key from the store itself, one request at a time."""
from __future__ import annotations

import asyncio
import os
import time

from deployments.faults import FaultSet
from deployments.media_source import build_media_recognizer
from protocol.media import Recognition
from serve_app.app_args import AppArgs
from serve_app.model_server import DeadlineExpired


class MediaServer:
    def __init__(self, stage: str, args: dict) -> None:
        self._stage = stage
        self._recognizer = build_media_recognizer(stage, AppArgs.model_validate(args).settings())
        self._env_faults = os.environ.get("BATON_FAULTS", "")
        self._faults = FaultSet.parse(self._env_faults)
        self._counts = {"calls": 0, "expired": 0}

    def reconfigure(self, user_config: dict) -> None:
        """user_config {"faults": "delay_ms=800"} flips fault injection without restarting the replica."""
        env = FaultSet.parse(self._env_faults).faults
        self._faults = FaultSet({**env, **FaultSet.parse(user_config.get("faults", ""), stage=self._stage).faults}, self._faults.cancelled)

    async def __call__(self, object_key: str, user_id: str, deadline: float) -> Recognition:
        self._counts["calls"] += 1
        if time.time() >= deadline:
            self._counts["expired"] += 1
            raise DeadlineExpired(f"{self._stage}: deadline passed before work started")
        await self._faults.apply(self._stage)
        # decoding and inference are CPU-bound: keep the replica's event loop free to accept and cancel requests
        return await asyncio.to_thread(self._recognizer.recognize, object_key, user_id)

    def stats(self) -> dict[str, int]:
        return {**self._counts, "cancelled": self._faults.cancelled}
