"""ModelClient over Ray Serve DeploymentHandles: a cancelled await cancels the request in the replica."""
from __future__ import annotations

import asyncio

from ray.serve.handle import DeploymentHandle

from engine.model_client import ModelClient, StageError
from protocol.http_chat import Candidate


class HandleModels(ModelClient):
    def __init__(self, *, classifier: DeploymentHandle, detector: DeploymentHandle, retriever: DeploymentHandle) -> None:
        self._handles = {"classifier": classifier, "detector": detector, "retriever": retriever}

    async def _call(self, stage: str, text: str, deadline: float) -> list[Candidate]:
        response = self._handles[stage].remote(text, deadline)
        try:
            return await response
        except asyncio.CancelledError:
            # Serve does not propagate deadlines; cancelling here stops the work in the replica
            response.cancel()
            raise
        except Exception as exc:  # replica error, back-pressure or unavailability: the stage degrades
            raise StageError(stage, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}") from exc

    async def classify(self, text: str, *, deadline: float) -> list[Candidate]:
        return await self._call("classifier", text, deadline)

    async def detect(self, text: str, *, deadline: float) -> list[Candidate]:
        return await self._call("detector", text, deadline)

    async def retrieve(self, text: str, *, deadline: float) -> list[Candidate]:
        return await self._call("retriever", text, deadline)
