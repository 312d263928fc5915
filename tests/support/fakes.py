"""Shared test doubles and builders for the engine unit tests: a scripted fake ModelClient plus the real
packs/settings."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import cache
from pathlib import Path

from config.serving import AdmissionConfig
from config.settings import Settings, load_settings
from engine.llm.lm import LmReply, LmRequest
from engine.model_client import ModelClient, NluCall, NluRequest, StageError, StageOutcome
from engine.pack import Pack, load_pack
from engine.plugins import InMemoryWorlds, PluginRegistry
from engine.session import InMemorySessionStore
from engine.turn import TurnEngine
from protocol.turn_debug import Candidate

ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIR = ROOT / "config"
MODEL_STAGES = ("classifier", "retriever", "detector")

Scores = Iterable[tuple[str, float]]


# Unit tests of routing logic must not depend on the host's scheduling: with instant fakes, a stall of the
# test process (a busy CI machine) longer than a production stage budget would mark a stage degraded. The
# default rig therefore runs with every budget scaled up (sums kept); tests about deadlines set their own
# with `with_budgets`.
UNIT_TEST_BUDGET_SCALE = 20.0


@cache
def base_settings() -> Settings:
    settings = load_settings(CONFIG_DIR, {})
    budgets = settings.budgets.model_copy(
        update={
            "turn_ms": {k: v * UNIT_TEST_BUDGET_SCALE for k, v in settings.budgets.turn_ms.items()},
            "stages_ms": {k: v * UNIT_TEST_BUDGET_SCALE for k, v in settings.budgets.stages_ms.items()},
        }
    )
    return settings.model_copy(update={"budgets": budgets})


@cache
def pack(name: str) -> Pack:
    return load_pack(CONFIG_DIR / "domains" / name)


def with_budgets(settings: Settings | None = None, *, turn_ms: float | None = None, **stage_ms: float) -> Settings:
    """Settings with a smaller turn budget and/or per-stage budgets (ms), built with model_copy(update=...)."""
    settings = settings or base_settings()
    budgets = settings.budgets
    update: dict = {}
    if turn_ms is not None:
        update["turn_ms"] = {**budgets.turn_ms, "text": float(turn_ms)}
        # the commit's reserve is held back from the models: keep it a small share of a shrunken turn
        stage_ms.setdefault("commit", min(budgets.stages_ms["commit"], turn_ms / 10))
    if stage_ms:
        update["stages_ms"] = {**budgets.stages_ms, **{k: float(v) for k, v in stage_ms.items()}}
    return settings.model_copy(update={"budgets": budgets.model_copy(update=update)})


class _FakeCall(NluCall):
    def __init__(self, tasks: dict[str, asyncio.Task]) -> None:
        self._tasks = tasks

    def outcome(self, stage: str):
        return asyncio.shield(self._tasks[stage])

    def cancel(self) -> None:
        for task in self._tasks.values():
            task.cancel()


class FakeModelClient(ModelClient):
    """Scripted model stages: candidates per (stage, text), optional per-stage delay or StageError.

    The heads wait for the encoder, as they do when served: a head's time is the encoder's delay plus its
    own, and a failed encoder fails every head. Records every request (`requests`), every stage call
    (`calls`: (stage, text)), every stage whose work was cancelled while it slept (`cancelled`) and every
    stage that returned normally (`finished`). Unscripted texts get no candidates.
    """

    def __init__(self, *, delays: dict[str, float] | None = None, errors: dict[str, str] | None = None) -> None:
        self.script: dict[str, dict[str, list[Candidate]]] = {s: {} for s in MODEL_STAGES}
        self.delays = dict(delays or {})
        self.errors = dict(errors or {})
        self.requests: list[NluRequest] = []
        self.calls: list[tuple[str, str]] = []
        self.deadlines: list[float] = []
        self.cancelled: list[str] = []
        self.finished: list[str] = []

    def on(
        self, text: str, *, classifier: Scores = (), retriever: Scores = (), detector: Scores = ()
    ) -> FakeModelClient:
        for stage, scores in (("classifier", classifier), ("retriever", retriever), ("detector", detector)):
            cands = [Candidate(intent=i, score=s) for i, s in scores]
            self.script[stage][text] = sorted(cands, key=lambda c: -c.score)
        return self

    def sure(self, text: str, intent: str, *, detector: Scores = ()) -> FakeModelClient:
        """Script a confident classifier and retriever for `intent` on `text`."""
        return self.on(
            text, classifier=[(intent, 0.92), ("__out_of_scope__", 0.03)], retriever=[(intent, 0.88)], detector=detector
        )

    def texts(self, stage: str) -> list[str]:
        return [t for s, t in self.calls if s == stage]

    def understand(self, request: NluRequest) -> NluCall:
        self.requests.append(request)
        self.deadlines.append(request.deadlines["encoder"])
        encoder = asyncio.ensure_future(self._stage("encoder", request.text, None))
        tasks = {
            "encoder": encoder,
            **{h: asyncio.ensure_future(self._stage(h, request.text, encoder, request.clauses)) for h in MODEL_STAGES},
        }
        return _FakeCall(tasks)

    async def _stage(
        self, stage: str, text: str, encoder: asyncio.Task | None, clauses: tuple[str, ...] = ()
    ) -> StageOutcome:
        self.calls.append((stage, text))
        try:
            if encoder is not None:
                try:
                    await asyncio.shield(encoder)
                except StageError as exc:
                    raise StageError(stage, f"no embedding: {exc}") from exc
            started = time.time()
            if self.delays.get(stage):
                await asyncio.sleep(self.delays[stage])
        except asyncio.CancelledError:
            self.cancelled.append(stage)
            raise
        if stage in self.errors:
            raise StageError(stage, self.errors[stage])
        self.finished.append(stage)
        script = self.script.get(stage, {})
        per_clause = tuple(list(script.get(c, [])) for c in clauses) if stage in ("classifier", "detector") else ()
        vector = (float(len(text)), 1.0) if stage == "encoder" else None  # a stand-in embedding: memory keys on it
        return StageOutcome(
            candidates=list(script.get(text, [])),
            started=started,
            finished=time.time(),
            clauses=per_clause,
            vector=vector,
        )


class Rig:
    """A TurnEngine over a real pack with the fake models, an in-memory store and fresh plugin state; with `llm`,
    the pack's LLM planner over that language model (a FakeLm), or one per backend ({name: model}, in order)."""

    def __init__(
        self,
        pack_name: str = "cockpit",
        *,
        models: FakeModelClient | None = None,
        settings: Settings | None = None,
        clock: Callable[[], datetime] | None = None,
        llm=None,
        replies=None,
    ) -> None:
        self.settings = settings or base_settings()
        self.pack = pack(pack_name)
        self.models = models or FakeModelClient()
        self.store = InMemorySessionStore(ttl_s=self.settings.session.ttl_s)
        self.worlds = InMemoryWorlds()
        self.llm = llm
        self.engine = TurnEngine(
            pack=self.pack,
            settings=self.settings,
            models=self.models,
            sessions=self.store,
            plugins=PluginRegistry(),
            worlds=self.worlds,
            clock=clock,
            llm_planner=self._llm_planner(llm) if llm is not None else None,
            replies=replies,
        )

    def _llm_planner(self, llm):
        from engine.llm.planner import LlmWorkflowPlanner
        from engine.llm.prompts import PromptSet
        from engine.pack import find_pack

        pack_dir = find_pack(self.pack.name, shipped_dir=self.settings.packs_dir, state_dir=self.settings.state_dir)
        prompts = PromptSet.load(pack_dir, self.settings.prompts)
        if isinstance(llm, dict):  # {backend name: its model}: the planners of llm.use.planner, in that order
            return [
                LlmWorkflowPlanner.configured(lm, self.pack, prompts, self.settings, backend=name)
                for name, lm in llm.items()
            ]
        return LlmWorkflowPlanner.configured(llm, self.pack, prompts, self.settings)

    def vehicle(self, user: str = "u1"):
        return self.worlds.world(user).vehicle

    def orders(self, user: str = "u1") -> dict[str, str]:
        return self.worlds.world(user).orders


class FakeLm:
    """Answers `text` after `delay` seconds (or raises `error`), recording every request and abort."""

    def __init__(self, text: str = "", *, delay: float = 0.0, error: Exception | None = None):
        self.text, self.delay, self.error = text, delay, error
        self.requests: list[LmRequest] = []
        self.aborted: list[str] = []
        self.cancelled = False
        self.started = asyncio.Event()

    async def complete(self, request: LmRequest) -> LmReply:
        self.requests.append(request)
        self.started.set()
        try:
            await asyncio.sleep(self.delay)
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        if self.error is not None:
            raise self.error
        return LmReply(self.text, "stop", 420, 40, 12.5)

    async def abort(self, request_id: str) -> None:
        self.aborted.append(request_id)


ONE_AT_A_TIME = AdmissionConfig(
    max_in_flight_turns=1, headroom=1.0, drift=0.002, smoothing=0.05, stale_s=5, min_samples=3, outlier=3
)


class FakeLlm:
    def __init__(self, text: str = '{"ok":true}', *, delay: float = 0.0) -> None:
        self.text, self.delay = text, delay
        self.requests: list[LmRequest] = []
        self.closed = 0

    async def complete(self, request: LmRequest) -> LmReply:
        self.requests.append(request)
        await asyncio.sleep(self.delay)
        return LmReply(text=self.text, finish_reason="stop", prompt_tokens=7, completion_tokens=3, ttft_ms=5.0)

    def for_route(self, route: str) -> FakeLlm:
        return self

    async def stream(self, request: LmRequest):
        self.requests.append(request)
        try:
            for n, piece in enumerate(("{", '"ok"', ":true}"), 1):
                await asyncio.sleep(self.delay)
                yield {
                    "text": piece,
                    "finish_reason": "stop" if n == 3 else None,
                    "prompt_tokens": 7,
                    "completion_tokens": n,
                }
        finally:
            self.closed += 1


def api_for(engine: TurnEngine, settings: Settings | None = None, **parts):
    """The HTTP app (no store: sessions in the engine) over `engine`, with `parts` for build_state (admission,
    uploads, metrics, ...) and `llm` for the language model."""
    from serve_app.http.api import create_api
    from serve_app.state import ModelClients, attach, build_state

    llm, replica = parts.pop("llm", None), parts.pop("replica", None)
    state = build_state(
        settings or engine.settings, ModelClients(nlu=FakeModelClient(), llm=llm), None, engine=engine, **parts
    )
    return attach(create_api(replica=replica), state)
