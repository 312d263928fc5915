"""What the ASR and OCR deployments share: read the object by key from Baton's store, check owner and kind,
recognize."""

from __future__ import annotations

from collections.abc import Callable

from config.settings import Settings
from engine.media import STAGE_KIND
from engine.media_keys import is_valid_key, kind_of
from media.store import ObjectNotFound, ObjectStore
from protocol.media import Recognition


class StoredMediaRecognizer:
    """`recognize(object_key, user_id)`: the bytes never leave this process; only the Recognition does."""

    def __init__(
        self,
        *,
        stage: str,
        store: ObjectStore,
        recognize: Callable[[bytes], Recognition],
        warmup: Callable[[], None] = lambda: None,
    ) -> None:
        self.stage = stage
        self._kind = STAGE_KIND[stage]
        self._store = store
        self._recognize = recognize
        self.warmup = warmup

    def recognize(self, object_key: str, user_id: str) -> Recognition:
        if not is_valid_key(object_key):
            return Recognition(status="not_found", reason=f"'{object_key}' is not a Baton media key.")
        if kind_of(object_key) != self._kind:
            return Recognition(
                status="wrong_kind", reason=f"{self.stage} needs {self._kind}; the object is {kind_of(object_key)}."
            )
        try:
            info = self._store.head(object_key)
            if info.owner != user_id:
                return Recognition(status="forbidden", reason="The media object belongs to another user.")
            _, data = self._store.get(object_key)
        except ObjectNotFound:
            return Recognition(status="not_found", reason=f"No media object '{object_key}'.")
        return self._recognize(data)


def build_media_recognizer(
    stage: str, settings: Settings, store: ObjectStore | None = None, *, warm: bool = True
) -> StoredMediaRecognizer:
    """The real recognizer for `stage` ('asr' | 'ocr') over the configured store, warmed up unless `warm` is False
    (a replica warms it on the thread that will serve it)."""
    from media.store import build_store

    store = store or build_store(settings)
    if stage == "asr":
        from deployments.asr import SpeechRecognizer
        from deployments.whisper import bootstrap_whisper

        path = settings.whisper_path if settings.asr.model_path else bootstrap_whisper(settings.state_dir)
        speech = SpeechRecognizer(model_path=path, cfg=settings.asr, max_audio_s=settings.media.max_audio_s)
        recognizer = StoredMediaRecognizer(stage=stage, store=store, recognize=speech.transcribe, warmup=speech.warmup)
    elif stage == "ocr":
        from deployments.ocr import ImageTextRecognizer

        ocr = ImageTextRecognizer(cfg=settings.ocr, max_image_pixels=settings.media.max_image_pixels)
        recognizer = StoredMediaRecognizer(stage=stage, store=store, recognize=ocr.recognize, warmup=ocr.warmup)
    else:
        raise ValueError(f"Unknown media stage '{stage}'; choose one of {sorted(STAGE_KIND)}.")
    if warm:
        recognizer.warmup()
    return recognizer
