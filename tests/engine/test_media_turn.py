"""Voice and image turns in the engine: the modality table, the media stage under the deadline, typed refusals."""

from __future__ import annotations

import asyncio

import pytest

from engine.errors import InvalidInput
from engine.media import MediaClient
from engine.media_errors import (
    ForeignSourceUrl,
    MediaForbidden,
    MediaKindMismatch,
    MediaNotFound,
    MediaTooLarge,
    MediaUnavailable,
    NoSpeech,
    NoText,
    UndecodableMedia,
)
from engine.media_keys import new_key, source_url_for
from engine.model_client import StageError
from engine.plugins import PluginRegistry
from engine.session import InMemorySessionStore
from engine.turn import TurnEngine
from protocol.http_chat import ChatRequest, TurnStatus
from protocol.media import Recognition
from tests.support.fakes import FakeModelClient, base_settings, pack, with_budgets

IMAGE_KEY, AUDIO_KEY = new_key("image", "png"), new_key("audio", "wav")


class FakeMedia(MediaClient):
    """Scripted recognitions per object key; records calls; optional delay or StageError."""

    def __init__(self, answers: dict[str, Recognition], *, delay_s: float = 0.0, error: str | None = None) -> None:
        self.answers = answers
        self.delay_s = delay_s
        self.error = error
        self.calls: list[tuple[str, str, str]] = []
        self.cancelled = 0

    async def _answer(self, stage: str, key: str, user_id: str) -> Recognition:
        self.calls.append((stage, key, user_id))
        try:
            await asyncio.sleep(self.delay_s)
        except asyncio.CancelledError:
            self.cancelled += 1
            raise
        if self.error:
            raise StageError(stage, self.error)
        return self.answers[key]

    async def transcribe(self, object_key: str, *, user_id: str, deadline: float) -> Recognition:
        return await self._answer("asr", object_key, user_id)

    async def ocr(self, object_key: str, *, user_id: str, deadline: float) -> Recognition:
        return await self._answer("ocr", object_key, user_id)


def rig(media: FakeMedia, settings=None) -> tuple[TurnEngine, FakeModelClient]:
    settings = settings or base_settings()
    models = FakeModelClient().sure("打开车窗", "cabin_window_open")
    engine = TurnEngine(
        pack=pack("cockpit"),
        settings=settings,
        models=models,
        sessions=InMemorySessionStore(ttl_s=settings.session.ttl_s),
        plugins=PluginRegistry(),
        media=media,
    )
    return engine, models


def ok(text: str) -> Recognition:
    return Recognition(status="ok", recognized_text=text)


def image_turn(key: str = IMAGE_KEY, **extra) -> ChatRequest:
    return ChatRequest(user_id="u1", modality="image_ocr", source_url=source_url_for(key), **extra)


async def test_an_image_turn_runs_the_text_turn_on_the_recognized_text() -> None:
    media = FakeMedia({IMAGE_KEY: ok("打开车窗")})
    engine, models = rig(media)
    resp = await engine.chat(image_turn())
    assert media.calls == [("ocr", IMAGE_KEY, "u1")]
    assert models.texts("classifier") == ["打开车窗"]
    assert resp.intent == "cabin_window_open" and resp.status == TurnStatus.completed
    assert resp.recognized_text == "打开车窗" and resp.recognition.status == "ok"
    settings = base_settings()
    assert (
        resp.timings.budget_ms
        == settings.budgets.turn_ms["image_ocr"]
        == settings.budgets.stages_ms["ocr"] + settings.budgets.turn_ms["text"]
    )
    assert "ocr" in resp.timings.stages and "asr" not in resp.timings.stages and resp.timings.degraded == []


async def test_a_voice_turn_calls_asr_with_the_voice_budget() -> None:
    media = FakeMedia({AUDIO_KEY: ok("打开车窗")})
    engine, _ = rig(media)
    resp = await engine.chat(ChatRequest(user_id="u1", modality="voice_asr", source_url=source_url_for(AUDIO_KEY)))
    assert media.calls == [("asr", AUDIO_KEY, "u1")]
    assert resp.timings.budget_ms == base_settings().budgets.turn_ms["voice_asr"] and "asr" in resp.timings.stages


async def test_plain_text_turns_are_unchanged_and_never_touch_media() -> None:
    media = FakeMedia({})
    engine, _ = rig(media)
    resp = await engine.chat(ChatRequest(user_id="u1", text="打开车窗"))
    assert resp.intent == "cabin_window_open" and resp.recognized_text is None and resp.recognition is None
    assert resp.timings.budget_ms == base_settings().budgets.turn_ms["text"] and media.calls == []


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"modality": "text"}, "text"),
        ({"modality": "text", "text": "打开车窗", "source_url": source_url_for(IMAGE_KEY)}, "source_url"),
        ({"modality": "image_ocr"}, "source_url"),
        ({"modality": "voice_asr", "text": "打开车窗"}, "source_url"),
        ({"modality": "image_ocr", "source_url": source_url_for(IMAGE_KEY), "text": "打开车窗"}, "text"),
        ({"modality": "voice_asr", "source_url": source_url_for(AUDIO_KEY), "text": ""}, "text"),
    ],
)
async def test_the_modality_table_is_enforced_before_any_work(body, field) -> None:
    media = FakeMedia({IMAGE_KEY: ok("打开车窗"), AUDIO_KEY: ok("打开车窗")})
    engine, models = rig(media)
    with pytest.raises(InvalidInput) as exc:
        await engine.chat(ChatRequest(user_id="u1", **body))
    assert exc.value.field == field and exc.value.message
    assert media.calls == [] and models.calls == []


@pytest.mark.parametrize(
    "url",
    [
        "https://elsewhere.example/cat.png",
        f"https://elsewhere.example/api/v1/media/{IMAGE_KEY}",
        "/api/v1/media/../secrets",
        f"file:///var/media/{IMAGE_KEY}",
        "/api/v1/media/image/short.png",
    ],
)
async def test_a_source_url_outside_the_store_is_refused_without_calling_ocr(url) -> None:
    media = FakeMedia({})
    engine, models = rig(media)
    with pytest.raises(ForeignSourceUrl) as exc:
        await engine.chat(ChatRequest(user_id="u1", modality="image_ocr", source_url=url))
    assert exc.value.field == "source_url" and media.calls == [] and models.calls == []


@pytest.mark.parametrize(
    ("status", "error"),
    [
        ("no_text", NoText),
        ("no_speech", NoSpeech),
        ("undecodable", UndecodableMedia),
        ("too_large", MediaTooLarge),
        ("not_found", MediaNotFound),
        ("forbidden", MediaForbidden),
        ("wrong_kind", MediaKindMismatch),
    ],
)
async def test_a_failed_recognition_is_a_typed_error_and_the_turn_does_not_run(status, error) -> None:
    media = FakeMedia({IMAGE_KEY: Recognition(status=status, reason=f"because {status}")})
    engine, models = rig(media)
    with pytest.raises(error) as exc:
        await engine.chat(image_turn(session_id="s-media"))
    assert exc.value.message == f"because {status}" and exc.value.field == "source_url"
    assert models.calls == []
    assert await engine._sessions.load("s-media") is None  # nothing was saved for a refused turn


async def test_recognized_text_over_the_text_limit_is_refused() -> None:
    settings = base_settings()
    media = FakeMedia({IMAGE_KEY: ok("开" * (settings.max_text_chars + 1))})
    engine, models = rig(media)
    with pytest.raises(InvalidInput):
        await engine.chat(image_turn())
    assert models.calls == []


async def test_a_late_recognizer_is_cancelled_at_its_stage_budget() -> None:
    media = FakeMedia({IMAGE_KEY: ok("打开车窗")}, delay_s=5.0)
    engine, models = rig(media, with_budgets(ocr=50))
    loop = asyncio.get_running_loop()
    t0 = loop.time()
    with pytest.raises(MediaUnavailable) as exc:
        await engine.chat(image_turn())
    assert loop.time() - t0 < 1.0 and media.cancelled == 1
    assert "ocr" in exc.value.message and models.calls == []


async def test_a_failing_recognizer_is_unavailable_not_a_crash() -> None:
    media = FakeMedia({}, error="replica died")
    engine, models = rig(media)
    with pytest.raises(MediaUnavailable) as exc:
        await engine.chat(ChatRequest(user_id="u1", modality="voice_asr", source_url=source_url_for(AUDIO_KEY)))
    assert "replica died" in exc.value.message and models.calls == []


async def test_an_engine_without_media_refuses_media_turns() -> None:
    settings = base_settings()
    engine = TurnEngine(
        pack=pack("cockpit"),
        settings=settings,
        models=FakeModelClient(),
        sessions=InMemorySessionStore(ttl_s=60),
        plugins=PluginRegistry(),
    )
    with pytest.raises(MediaUnavailable):
        await engine.chat(image_turn())


def test_media_turn_budgets_must_add_up() -> None:
    from config.budgets import Budgets

    budgets = base_settings().budgets.model_dump()
    budgets["turn_ms"]["image_ocr"] += 1
    with pytest.raises(ValueError, match="turn_ms.image_ocr"):
        Budgets.model_validate(budgets)


async def test_an_audio_object_in_an_image_turn_is_refused_before_the_hop() -> None:
    media = FakeMedia({AUDIO_KEY: ok("打开车窗")})
    engine, models = rig(media)
    with pytest.raises(MediaKindMismatch) as exc:
        await engine.chat(image_turn(AUDIO_KEY))
    assert exc.value.field == "source_url" and media.calls == [] and models.calls == []
