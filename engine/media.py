"""The media stage of a turn (seed 002): the modality table, then ASR/OCR by source_url inside the turn's deadline."""

from __future__ import annotations

import abc

from config.budgets import MEDIA_STAGE
from config.media import MediaKind
from config.settings import Settings
from engine.deadline import Deadline, StageTimeout
from engine.errors import InvalidInput
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
from engine.media_keys import key_from_source_url, kind_of
from engine.model_client import StageError
from protocol.http_chat import ChatRequest
from protocol.media import Recognition

STAGE_KIND: dict[str, MediaKind] = {"asr": "audio", "ocr": "image"}
ERROR_BY_STATUS = {
    "no_speech": NoSpeech,
    "no_text": NoText,
    "undecodable": UndecodableMedia,
    "too_large": MediaTooLarge,
    "not_found": MediaNotFound,
    "forbidden": MediaForbidden,
    "wrong_kind": MediaKindMismatch,
}


class MediaClient(abc.ABC):
    """ASR and OCR by object key, beside `ModelClient`; Ray handles and in-process recognizers implement it.

    The recognizer reads the object from Baton's store itself and checks that `user_id` owns it, so media
    bytes never travel through the orchestrator. `deadline` is the stage's absolute deadline (epoch seconds):
    min(the stage budget, the turn's time left), so a replica can drop work that could no longer finish.
    Implementations cancel the work when the awaiting task is cancelled and raise `StageError` on failure.
    """

    @abc.abstractmethod
    async def transcribe(self, object_key: str, *, user_id: str, deadline: float) -> Recognition:
        """ASR of an audio object."""

    @abc.abstractmethod
    async def ocr(self, object_key: str, *, user_id: str, deadline: float) -> Recognition:
        """OCR of an image object."""


def check_modality(request: ChatRequest) -> None:
    """The seed's constraint table: `text` needs text and no source_url; voice/image need source_url and no text."""
    if request.modality == "text":
        if request.text is None:
            raise InvalidInput("Field 'text' is required when modality is 'text'.", field="text")
        if request.source_url is not None:
            raise InvalidInput("Field 'source_url' must be absent when modality is 'text'.", field="source_url")
        return
    if request.source_url is None:
        raise InvalidInput(f"Field 'source_url' is required when modality is '{request.modality}'.", field="source_url")
    if request.text is not None:
        raise InvalidInput(
            f"Field 'text' must be absent when modality is '{request.modality}'; the text comes from recognition.",
            field="text",
        )


class MediaStage:
    def __init__(self, *, settings: Settings, media: MediaClient | None) -> None:
        self._settings = settings
        self._media = media

    def object_key(self, source_url: str) -> str:
        key = key_from_source_url(source_url, self._settings.media.public_base_url)
        if key is None:
            raise ForeignSourceUrl(
                "source_url is not a Baton media URL; upload the file with POST /api/v1/media/upload first.",
                field="source_url",
            )
        return key

    async def recognize(self, request: ChatRequest, deadline: Deadline) -> Recognition:
        """Recognized text of a voice/image turn, or a typed error; the text turn never runs on a failed recognition."""
        stage = MEDIA_STAGE[request.modality]
        key = self.object_key(request.source_url or "")
        if kind_of(key) != STAGE_KIND[stage]:
            raise MediaKindMismatch(
                f"{request.modality} needs an {STAGE_KIND[stage]} upload; source_url names an {kind_of(key)} object.",
                field="source_url",
            )
        if self._media is None:
            raise MediaUnavailable(f"This server has no {stage} stage.", field="modality")
        call = self._media.transcribe if stage == "asr" else self._media.ocr
        try:
            budget = self._settings.budgets.stage_s(stage)
            result = await deadline.run(
                stage, budget, lambda: call(key, user_id=request.user_id, deadline=deadline.stage_at(budget))
            )
        except (StageTimeout, StageError) as exc:
            deadline.degrade(stage)
            raise MediaUnavailable(
                f"{stage} did not answer in time or failed ({exc}); nothing was executed, retry shortly."
            ) from exc
        if result.status != "ok":
            raise ERROR_BY_STATUS[result.status](
                result.reason or f"{stage} status {result.status}.", field="source_url"
            )
        return result
