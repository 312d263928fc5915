"""The ASR/OCR deployments' store access: objects are read by key, only for their owner, only of the stage's kind."""

from __future__ import annotations

import pytest

from deployments.media_source import StoredMediaRecognizer, build_media_recognizer
from engine.media_keys import new_key
from media.store import LocalStore
from protocol.media import Recognition


@pytest.fixture
def rig(tmp_path):
    store = LocalStore(tmp_path)
    seen: list[bytes] = []

    def recognize(data: bytes) -> Recognition:
        seen.append(data)
        return Recognition(status="ok", recognized_text="ok")

    return store, StoredMediaRecognizer(stage="ocr", store=store, recognize=recognize), seen


def test_the_owner_gets_the_stored_bytes_recognized(rig):
    store, recognizer, seen = rig
    key = new_key("image", "png")
    store.put(key, b"png-bytes", owner="u1", content_type="image/png")
    assert recognizer.recognize(key, "u1").status == "ok" and seen == [b"png-bytes"]


def test_refusals_never_reach_the_model(rig):
    store, recognizer, seen = rig
    image, audio = new_key("image", "png"), new_key("audio", "wav")
    store.put(image, b"png-bytes", owner="u1", content_type="image/png")
    store.put(audio, b"wav-bytes", owner="u1", content_type="audio/wav")
    assert recognizer.recognize(image, "u2").status == "forbidden"
    assert recognizer.recognize(audio, "u1").status == "wrong_kind"
    assert recognizer.recognize(new_key("image", "png"), "u1").status == "not_found"
    assert recognizer.recognize("image/../../etc/passwd", "u1").status == "not_found"
    assert seen == []


def test_an_unknown_stage_is_refused(cockpit):
    with pytest.raises(ValueError, match="Unknown media stage"):
        build_media_recognizer("translate", cockpit[1])
