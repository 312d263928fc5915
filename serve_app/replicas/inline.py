"""Layout `inline`: the encoder and its heads run inside the Orchestrator replica, behind the `ModelClient` the engine
already calls. The same replica body as the NLU deployment's (micro-batching across the replica's concurrent turns on
a thread of its own, the deadline drop, fault injection, counters and metrics), without the Serve hop: where the
models share the machine's cores with the orchestrator, that hop costs more than scaling them apart can give back."""

from __future__ import annotations

import asyncio
import time

from config.settings import Settings
from deployments.nlu import NluItem
from deployments.nlu_call import FutureCall, describe
from engine.model_client import ENCODER, ModelClient, NluCall, NluRequest
from serve_app.replicas.model import ReplicaBody, warm_body


class InlineModels(ModelClient):
    def __init__(self, body: ReplicaBody) -> None:
        self.body = body

    @classmethod
    async def start(cls, settings: Settings) -> InlineModels:
        """The fused models (encoder and heads), loaded and warmed up in this process."""
        return cls(await warm_body("nlu", settings))

    def understand(self, request: NluRequest) -> NluCall:
        call = FutureCall()
        task = asyncio.ensure_future(self._collect(call, request, time.time()))
        call.on_cancel(task.cancel)  # a turn that stops waiting takes its item out of the batch it waits in
        return call

    async def _collect(self, call: FutureCall, request: NluRequest, started: float) -> None:
        try:
            answer = await self.body.call(NluItem(request.text, request.clauses), request.deadlines[ENCODER])
        # a deadline drop or an injected failure: every stage degrades, as over a hop (a cancellation is no Exception)
        except Exception as exc:  # noqa: BLE001
            call.fail_all(describe(exc))
            return
        call.resolve_answer(answer, started, time.time())
