"""ModelClient over Ray Serve DeploymentHandles, in the two layouts the app builder composes.

fused: one call to the NLU deployment, whose replica runs the encoder and the three heads.
split: the Encoder's DeploymentResponse is passed straight into the head calls (model composition: nothing is
awaited in between); the orchestrator also awaits it itself, to time the encoder and tell its failure apart.
Cancelling the call cancels the requests in the replicas.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Collection
from typing import Any, cast

from ray.serve.handle import DeploymentHandle, DeploymentResponse

from deployments.nlu import NluItem
from deployments.nlu_call import FutureCall, candidates, describe
from engine.model_client import ENCODER, HEADS, ModelClient, NluCall, NluRequest, StageOutcome


class FusedHandleModels(ModelClient):
    def __init__(self, nlu: DeploymentHandle) -> None:
        self._nlu = nlu

    def understand(self, request: NluRequest) -> NluCall:
        call = FutureCall()
        response = cast(
            DeploymentResponse[Any],
            self._nlu.remote(NluItem(request.text, request.clauses), request.deadlines[ENCODER]),
        )
        task = asyncio.ensure_future(self._collect(call, response, time.time()))

        def cancel() -> None:
            response.cancel()
            task.cancel()

        call.on_cancel(cancel)
        return call

    @staticmethod
    async def _collect(call: FutureCall, response: DeploymentResponse, started: float) -> None:
        try:
            answer = await response
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # replica error, back-pressure, deadline drop or unavailability: every stage degrades
            call.fail_all(describe(exc))
            return
        call.resolve_answer(answer, started, time.time())


class SplitHandleModels(ModelClient):
    def __init__(
        self, *, encoder: DeploymentHandle, heads: dict[str, DeploymentHandle], shared: Collection[str]
    ) -> None:
        self._encoder = encoder
        self._heads = heads
        self._shared = frozenset(shared)

    def understand(self, request: NluRequest) -> NluCall:
        call = FutureCall()
        item = NluItem(request.text, request.clauses)
        started = time.time()
        vectors = (
            cast(DeploymentResponse[Any], self._encoder.remote(item, request.deadlines[ENCODER]))
            if self._shared
            else None
        )
        responses = {
            h: cast(
                DeploymentResponse[Any],
                self._heads[h].remote(item, request.deadlines[h], vectors=vectors if h in self._shared else None),
            )
            for h in HEADS
        }
        encoder_done = asyncio.get_running_loop().create_future()
        tasks = [asyncio.ensure_future(self._encoder_outcome(call, vectors, started, encoder_done))]
        tasks += [
            asyncio.ensure_future(self._head_outcome(call, h, r, started, encoder_done)) for h, r in responses.items()
        ]

        def cancel() -> None:
            for r in [vectors, *responses.values()]:
                if r is not None:
                    r.cancel()
            for t in tasks:
                t.cancel()

        call.on_cancel(cancel)
        return call

    @staticmethod
    async def _encoder_outcome(
        call: FutureCall, vectors: DeploymentResponse | None, started: float, done: asyncio.Future
    ) -> None:
        try:
            rows = await vectors if vectors is not None else None
            vector = tuple(float(x) for x in rows[0]) if rows is not None and len(rows) else None
            call.resolve(ENCODER, StageOutcome(started=started, finished=time.time(), vector=vector))
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            call.fail(ENCODER, describe(exc))
        finally:
            if not done.done():
                done.set_result(time.time())

    @staticmethod
    async def _head_outcome(
        call: FutureCall, head: str, response: DeploymentResponse, started: float, encoder_done: asyncio.Future
    ) -> None:
        try:
            scores = await response
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # its own failure, or its input's (the encoder's response failed)
            call.fail(head, describe(exc))
            return
        begun = encoder_done.result() if encoder_done.done() else started
        call.resolve(
            head,
            StageOutcome(
                candidates=candidates(scores.text),
                started=min(begun, time.time()),
                finished=time.time(),
                clauses=tuple(candidates(c) for c in scores.clauses),
            ),
        )
