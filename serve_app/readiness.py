"""Ready means ready: the ingress reports healthy only once every deployment runs and a warm-up went through every
stage.

The warm-up is a text turn through the real path (shadow user, session lease, every model stage, commit) that
must come back with no degraded stage, then one OCR and one ASR call on the bundled samples. Until it passes,
`/health` answers 503 with the reason. Plain asyncio: the Serve status check is injected.
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
from engine.model_client import NLU_STAGES
from media.uploads import MediaUploads
from protocol.http_chat import ChatRequest

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
MEDIA_OK = {
    "ocr": ("ok",),
    "asr": ("ok", "no_speech"),
}  # a synthetic voice: a small Whisper may hear none, and that is an answer
StatusCheck = Callable[[], Awaitable[str | None]]  # the reason the app's deployments are not all running, or None


@dataclass
class Readiness:
    """Whether the whole app answers warm: `ready`, and the `reason` while it does not. An app with no warm-up to run
    is ready from the start; a served replica's flag is set by its `AppReadiness`."""

    ready: bool = True
    reason: str = ""


class AppReadiness:
    """Sets `state.readiness`: not ready until the deployments run and the warm-up went through every stage."""

    def __init__(
        self,
        *,
        state: AppState,
        replica: str,
        deployments_running: StatusCheck,
        allowed_degraded: frozenset[str] = frozenset(),
        retry_s: float = 0.5,
    ) -> None:
        self._state = state
        self._flag = state.readiness
        self._session_id = f"warmup-{replica}"
        self._deployments_running = deployments_running
        self._allowed = allowed_degraded
        self._retry_s = retry_s
        self._media_keys: dict[str, str] = {}
        self._flag.ready, self._flag.reason = False, "warming up"

    @property
    def ready(self) -> bool:
        return self._flag.ready

    @property
    def reason(self) -> str:
        return self._flag.reason

    async def check(self) -> bool:
        """One attempt; sets `ready` or the `reason` it is not."""
        try:
            reason = (
                await self._deployments_running()
                or await self._text_turn()
                or await self._planner_call()
                or await self._media_calls()
            )
        except Exception as exc:  # anything a cold app can throw: still starting
            reason = f"warm-up failed: {type(exc).__name__}: {exc}"
        self._flag.ready, self._flag.reason = reason is None, reason or ""
        return self._flag.ready

    async def until_ready(self, *, within_s: float | None = None) -> bool:
        give_up = None if within_s is None else time.monotonic() + within_s
        while not await self.check():
            if give_up is not None and time.monotonic() >= give_up:
                return False
            await asyncio.sleep(self._retry_s)
        return True

    async def _text_turn(self) -> str | None:
        state = self._state
        body = ChatRequest(user_id=WARMUP_USER, session_id=self._session_id, text=WARMUP_TEXT)
        deadline = state.engine.deadline("text")
        if state.store is None:
            response = await state.engine.chat(body, deadline=deadline)
        else:
            user = await state.store.callers.shadow_user(WARMUP_USER)
            response = await state.store.chat.chat(body, user.id, deadline)
        degraded = set(response.timings.degraded) - self._allowed
        missing = [s for s in NLU_STAGES if s not in response.timings.stages]
        if degraded or missing:
            return f"warm-up turn degraded {sorted(degraded)}{f', skipped {missing}' if missing else ''}"
        return None

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
        budgets = self._state.settings.budgets
        samples: tuple[tuple[str, Path, MediaKind], ...] = (
            ("ocr", WARMUP_IMAGE, "image"),
            ("asr", WARMUP_AUDIO, "audio"),
        )
        for stage, sample, file_type in samples:
            if stage in self._allowed:
                continue
            key = self._media_keys.get(stage) or await self._upload(uploads, sample, file_type)
            self._media_keys[stage] = key
            call = media.ocr if stage == "ocr" else media.transcribe
            budget = budgets.stage_s(stage)
            result = await asyncio.wait_for(call(key, user_id=WARMUP_USER, deadline=time.time() + budget), budget)
            if result.status not in MEDIA_OK[stage]:
                return f"{stage} warm-up answered {result.status}: {result.reason}"
        return None

    @staticmethod
    async def _upload(uploads: MediaUploads, sample: Path, file_type: MediaKind) -> str:
        stored = await asyncio.to_thread(
            uploads.accept, data=sample.read_bytes(), file_type=file_type, user_id=WARMUP_USER
        )
        return stored.object_key
