"""Ready means every stage has answered: the ingress reports healthy once every deployment runs, each model stage
answered a warm-up call (loaded, compiled, first call done), and a text turn went through the real path.

Each stage is warmed with a generous bound of its own (`STAGE_WARM_S`), never under the turn budget: a stage that is
slow for a reason other than being cold (a fault, a busy machine) still answers, and the app serves, reporting it.
The warm-up turn then runs under the real budget, and the stages it degraded are what the app reports as degraded
(`/health`'s reason, the `baton_warmup_degraded` gauge). A stage that never answers keeps the app not ready, with a
reason naming it; the launcher's start timeout bounds the wait. Plain asyncio: the Serve status check is injected.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

from config.media import MediaKind
from deployments.asr import WARMUP_AUDIO
from deployments.ocr import WARMUP_IMAGE
from engine.deadline import Deadline
from engine.model_client import NLU_STAGES, ModelClient, NluRequest, StageError
from media.uploads import MediaUploads
from protocol.http_chat import ChatRequest, ChatResponse

if TYPE_CHECKING:  # the state holds the flag this module sets; the warm-up reads the state
    from serve_app.state import AppState

WARMUP_USER = "__baton_warmup__"
WARMUP_TEXT = "麻烦帮我看看现在的情况"  # not social and no command: every model stage runs, no plugin does
# Two plans, their times a year apart: the first prefills the planner's prompt, the second finds the place where
# every later plan's prompt starts to differ (the time), and the engine keeps its cache up to there from then on
# (gemma-3's sliding-window layers are cached only at such places). Without the second, the first escalation of a
# turn prefilled the whole prompt (32 s here) and the turns behind it waited on it.
WARMUP_PLAN_TEXTS = ("先打开车窗，然后把音乐关掉", "把空调调到二十二度再导航回家")
PLANNER_WARMUP_S = 60.0
# how long one warm-up call may take a stage to answer: a cold load or compile, never the turn budget
STAGE_WARM_S = 60.0
# while serving degraded, a warm-up turn this often tells when it no longer is (a fault cleared, a busy spell over)
DEGRADED_PROBE_S = 2.0
MEDIA_OK = {
    "ocr": ("ok",),
    "asr": ("ok", "no_speech"),
}  # a synthetic voice: a small Whisper may hear none, and that is an answer
StatusCheck = Callable[[], Awaitable[str | None]]  # the reason the app's deployments are not all running, or None
Report = Callable[[tuple[str, ...]], None]  # told the stages the warm-up turn degraded, once ready


@dataclass
class Readiness:
    """Whether the whole app answers: `ready`, the `reason` while it does not (or what degrades once it does), and
    the `degraded` stages of the warm-up turn. An app with no warm-up to run is ready from the start; a served
    replica's flag is set by its `AppReadiness`."""

    ready: bool = True
    reason: str = ""
    degraded: tuple[str, ...] = ()


class AppReadiness:
    """Sets `state.readiness`: not ready until the deployments run and every stage answered its warm-up."""

    def __init__(
        self,
        *,
        state: AppState,
        replica: str,
        deployments_running: StatusCheck,
        models: ModelClient | None = None,
        allowed_degraded: frozenset[str] = frozenset(),
        report: Report | None = None,
        warm_s: float = STAGE_WARM_S,
        retry_s: float = 0.5,
    ) -> None:
        """`models`: the text models, each warmed by a call of its own; `allowed_degraded`: stages whose failure
        was asked for (a fault injected from the start), which count as answered when they fail."""
        self._state = state
        self._flag = state.readiness
        self._session_id = f"warmup-{replica}"
        self._deployments_running = deployments_running
        self._models = models
        self._allowed = allowed_degraded
        self._report = report
        self._warm_s = warm_s
        self._retry_s = retry_s
        self._answered: set[str] = set()
        self._media_keys: dict[str, str] = {}
        self._flag.ready, self._flag.reason, self._flag.degraded = False, "warming up", ()

    @property
    def ready(self) -> bool:
        return self._flag.ready

    @property
    def reason(self) -> str:
        return self._flag.reason

    async def check(self) -> bool:
        """One attempt; sets `ready` (and what degrades) or the `reason` it is not."""
        degraded: tuple[str, ...] = ()
        try:
            reason = (
                await self._deployments_running()
                or await self._text_stages()
                or await self._planner_call()
                or await self._media_calls()
            )
            if reason is None:
                reason, degraded = await self._text_turn()
        except Exception as exc:  # anything a cold app can throw: still starting
            reason = f"warm-up failed: {type(exc).__name__}: {exc}"
        self._flag.degraded = degraded
        self._flag.ready = reason is None
        self._flag.reason = reason if reason is not None else degraded_reason(degraded)
        if self._flag.ready and self._report is not None:
            self._report(degraded)
        return self._flag.ready

    async def until_ready(self, *, within_s: float | None = None) -> bool:
        give_up = None if within_s is None else time.monotonic() + within_s
        while not await self.check():
            if give_up is not None and time.monotonic() >= give_up:
                return False
            await asyncio.sleep(self._retry_s)
        return True

    async def while_degraded(self, *, every_s: float = DEGRADED_PROBE_S) -> None:
        """Once ready but degraded, a warm-up turn every `every_s` until one runs with no stage degraded: what
        /health and the gauge report stays current."""
        while self._flag.ready and self._flag.degraded:
            await asyncio.sleep(every_s)
            try:
                response = await self._turn()
            except Exception:  # a refused or failed probe tells nothing new
                continue
            degraded = tuple(sorted(response.timings.degraded))
            self._flag.degraded, self._flag.reason = degraded, degraded_reason(degraded)
            if self._report is not None:
                self._report(degraded)

    async def _text_stages(self) -> str | None:
        """Each text model stage once, with `warm_s` to answer: the first stage that does not is named."""
        if self._models is None or self._answered >= set(NLU_STAGES):
            return None
        at = time.time() + self._warm_s
        call = self._models.understand(
            NluRequest(text=WARMUP_TEXT, clauses=(), deadlines=dict.fromkeys(NLU_STAGES, at))
        )
        try:
            for stage in NLU_STAGES:
                if stage in self._answered:
                    continue
                try:
                    await asyncio.wait_for(call.outcome(stage), max(0.0, at - time.time()))
                except (TimeoutError, StageError) as exc:
                    if stage not in self._allowed:
                        why = f"no answer in {self._warm_s:g} s" if isinstance(exc, TimeoutError) else str(exc)
                        return f"stage {stage} has not answered its warm-up call ({why})"
                self._answered.add(stage)
        finally:
            call.cancel()
        return None

    async def _text_turn(self) -> tuple[str | None, tuple[str, ...]]:
        """A text turn through the real path under the real budget; a first turn that degrades (a cold store, a
        session's first lease) is followed by a second, and the stages the last one degraded are reported."""
        degraded: tuple[str, ...] = ()
        for _ in range(2):
            response = await self._turn()
            missing = [s for s in NLU_STAGES if s not in response.timings.stages]
            if missing:
                return f"warm-up turn skipped {missing}", ()
            degraded = tuple(sorted(response.timings.degraded))
            if not degraded:
                break
        return None, degraded

    async def _turn(self) -> ChatResponse:
        state = self._state
        body = ChatRequest(user_id=WARMUP_USER, session_id=self._session_id, text=WARMUP_TEXT)
        deadline = state.engine.deadline("text")
        if state.store is None:
            return await state.engine.chat(body, deadline=deadline)
        user = await state.store.callers.shadow_user(WARMUP_USER)
        return await state.store.chat.chat(body, user.id, deadline)

    async def _planner_call(self) -> str | None:
        """Plans from the LLM planner with the pack's own schema and prompt (its grammar compiled and the prompt
        cached in the engine), each given as long as a cold engine needs; rejected is an answer too (a base model
        plans poorly)."""
        planner = self._state.llm_planner
        if planner is None or "planner" in self._allowed:
            return None
        tz = ZoneInfo(self._state.settings.timezone)
        now = datetime.now(tz)
        for text, when in zip(WARMUP_PLAN_TEXTS, (now, now + timedelta(days=366)), strict=True):
            outcome = await planner.plan(
                text, deadline=Deadline(PLANNER_WARMUP_S * 1000), budget_s=PLANNER_WARMUP_S, now=when
            )
            if outcome.timed_out or outcome.error:
                return f"planner warm-up: {outcome.reason}"
        return None

    async def _media_calls(self) -> str | None:
        media, uploads = self._state.engine.media_client, self._state.uploads
        if media is None or uploads is None:
            return None
        samples: tuple[tuple[str, Path, MediaKind], ...] = (
            ("ocr", WARMUP_IMAGE, "image"),
            ("asr", WARMUP_AUDIO, "audio"),
        )
        for stage, sample, file_type in samples:
            if stage in self._allowed or stage in self._answered:
                continue
            key = self._media_keys.get(stage) or await self._upload(uploads, sample, file_type)
            self._media_keys[stage] = key
            call = media.ocr if stage == "ocr" else media.transcribe
            at = time.time() + self._warm_s
            try:
                result = await asyncio.wait_for(call(key, user_id=WARMUP_USER, deadline=at), self._warm_s)
            except TimeoutError:
                return f"stage {stage} has not answered its warm-up call (no answer in {self._warm_s:g} s)"
            if result.status not in MEDIA_OK[stage]:
                return f"stage {stage} warm-up answered {result.status}: {result.reason}"
            self._answered.add(stage)
        return None

    @staticmethod
    async def _upload(uploads: MediaUploads, sample: Path, file_type: MediaKind) -> str:
        stored = await uploads.upload(data=sample.read_bytes(), file_type=file_type, user_id=WARMUP_USER)
        return stored.object_key


def degraded_reason(degraded: tuple[str, ...]) -> str:
    """What /health says of an app that serves degraded ("" when nothing is)."""
    if not degraded:
        return ""
    return f"serving degraded: {', '.join(degraded)} missed the turn budget in the warm-up turn"
