"""An `NluCall` whose per-stage outcomes are futures, and how a fused answer becomes those outcomes."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from deployments.nlu import NluAnswer, Scores
from engine.model_client import ENCODER, HEADS, NLU_STAGES, NluCall, StageError, StageOutcome
from protocol.turn_debug import Candidate


def candidates(scores: Scores) -> list[Candidate]:
    return [Candidate(intent=i, score=s) for i, s in scores]


class FutureCall(NluCall):
    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self._futures: dict[str, asyncio.Future[StageOutcome]] = {s: loop.create_future() for s in NLU_STAGES}
        for future in self._futures.values():
            future.add_done_callback(_retrieve)
        self._on_cancel: list[Callable[[], object]] = []

    def outcome(self, stage: str) -> Awaitable[StageOutcome]:
        return asyncio.shield(self._futures[stage])  # a timed-out wait must not cancel what others await

    def on_cancel(self, hook: Callable[[], object]) -> None:
        self._on_cancel.append(hook)

    def resolve(self, stage: str, outcome: StageOutcome) -> None:
        if not self._futures[stage].done():
            self._futures[stage].set_result(outcome)

    def fail(self, stage: str, message: str) -> None:
        if not self._futures[stage].done():
            self._futures[stage].set_exception(StageError(stage, message))

    def fail_all(self, message: str) -> None:
        for stage in NLU_STAGES:
            self.fail(stage, message)

    def cancel(self) -> None:
        if all(f.done() for f in self._futures.values()):
            return
        for hook in self._on_cancel:
            hook()
        self.fail_all("cancelled: the turn stopped waiting")

    def resolve_answer(self, answer: NluAnswer, started: float, finished: float) -> None:
        """Outcomes of a fused answer. The replica ran the encoder, then each head, one after the other: the heads'
        compute is laid out at the end of the round trip and the encoder span covers the rest (hop and queue)."""
        head_s = sum(answer.ms.get(h, 0.0) for h in HEADS) / 1000.0
        encoder_end = max(started, finished - head_s)
        if ENCODER in answer.errors:
            self.fail(ENCODER, answer.errors[ENCODER])
        else:
            self.resolve(
                ENCODER,
                StageOutcome(
                    started=started,
                    finished=encoder_end,
                    vector=tuple(answer.vector) if answer.vector is not None else None,
                ),
            )
        t = encoder_end
        for head in HEADS:
            end = min(finished, t + answer.ms.get(head, 0.0) / 1000.0)
            if head in answer.errors:
                self.fail(head, answer.errors[head])
            else:
                self.resolve(
                    head,
                    StageOutcome(
                        candidates=candidates(answer.scores.get(head, [])),
                        started=t,
                        finished=end,
                        partial=answer.partial.get(head),
                        clauses=tuple(candidates(c) for c in answer.clauses.get(head, ())),
                    ),
                )
            t = end


def _retrieve(future: asyncio.Future[StageOutcome]) -> None:
    if not future.cancelled():
        future.exception()  # an outcome nobody awaited (the turn moved on) is not an unhandled error


def describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}".strip()
