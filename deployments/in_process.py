"""In-process implementation of the engine's ModelClient: the same NLU models called on a worker thread (the monolith
path).

One unbatched pass per turn, as a single FastAPI process would run seed 003's pipeline.
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor

from deployments.faults import FaultSet
from deployments.nlu import NluItem, NluModel, NoopNlu
from deployments.nlu_call import FutureCall, describe
from engine.model_client import NLU_STAGES, ModelClient, NluCall, NluRequest


class InProcessModels(ModelClient):
    """Runs the NLU model on worker threads so the event loop stays free; faults apply as they would in a replica."""

    def __init__(self, nlu: NluModel | NoopNlu, *, faults: FaultSet | None = None, workers: int = 1) -> None:
        self.nlu = nlu
        self._faults = faults or FaultSet()
        self._pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="baton-model")

    def understand(self, request: NluRequest) -> NluCall:
        call = FutureCall()
        task = asyncio.ensure_future(self._run(call, NluItem(request.text, request.clauses)))
        call.on_cancel(task.cancel)
        return call

    async def _run(self, call: FutureCall, item: NluItem) -> None:
        started = time.time()
        try:
            await self._faults.delay(NLU_STAGES)
            fail = self._faults.failing(NLU_STAGES)
            answers = await asyncio.get_running_loop().run_in_executor(self._pool, self.nlu.analyze, [item], None, fail)
        except asyncio.CancelledError:
            call.fail_all("cancelled")
            raise
        except Exception as exc:  # a model failure degrades the stages, it never fails the turn
            call.fail_all(describe(exc))
            return
        call.resolve_answer(answers[0], started, time.time())

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
