"""Media over HTTP without Ray: upload and owner-only download on a real store, voice/image turns through the in-process
recognizers (real RapidOCR and Whisper), and every bad input answered with a typed 4xx envelope."""

from __future__ import annotations

import time

import httpx
import pytest

from benchmarks.media_samples import available_fonts, blank_png, render_text, silence_wav, speak, transcode
from config.serving import AdmissionConfig
from deployments.in_process_media import InProcessMedia
from deployments.nlu_call import FutureCall
from engine.model_client import ModelClient, NluRequest, StageOutcome
from engine.plugins import PluginRegistry
from engine.session import InMemorySessionStore
from engine.turn import TurnEngine
from media.store import LocalStore
from media.uploads import MediaUploads
from protocol.turn_debug import Candidate
from serve_app.state import state_of
from serve_app.turns.admission import Admission
from tests.support.fakes import api_for

UPLOAD, CHAT = "/api/v1/media/upload", "/api/v1/agent/chat"
ADMIT = AdmissionConfig(
    max_in_flight_turns=8, headroom=1.0, drift=0.002, smoothing=0.05, stale_s=5, min_samples=3, outlier=3
)


class WindowModels(ModelClient):
    """Every text is 'open the window' with confidence; records texts so tests can see whether a turn ran."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def understand(self, request: NluRequest) -> FutureCall:
        self.texts.append(request.text)
        call, now = FutureCall(), time.time()
        sure = [Candidate(intent="cabin_window_open", score=0.95)]
        for stage, candidates in (("encoder", []), ("classifier", sure), ("retriever", sure), ("detector", [])):
            call.resolve(stage, StageOutcome(candidates=candidates, started=now, finished=now))
        return call


@pytest.fixture(scope="module")
def rig(cockpit, tmp_path_factory):
    pack, settings = cockpit
    store = LocalStore(tmp_path_factory.mktemp("media"))
    # English speech from espeak-ng: the served model with its language switched (Chinese ASR is a bigger Whisper)
    english = settings.model_copy(
        update={"asr": settings.asr.model_copy(update={"language": "en", "initial_prompt": ""})}
    )
    media = InProcessMedia(english, store=store)
    models = WindowModels()
    engine = TurnEngine(
        pack=pack,
        settings=settings,
        models=models,
        sessions=InMemorySessionStore(ttl_s=60),
        plugins=PluginRegistry(),
        media=media,
    )
    api = api_for(engine, admission=Admission(ADMIT), uploads=MediaUploads(store=store, cfg=settings.media))
    yield api, models, store
    media.close()


@pytest.fixture
async def client(rig):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=rig[0]), base_url="http://localhost") as c:
        yield c


def _png(text: str = "打开车窗") -> bytes:
    return render_text(text, font=available_fonts()[0], size=40, angle=2.0)


async def upload(
    client, data: bytes, file_type: str = "image", user_id: str = "u1", name: str = "x.bin"
) -> httpx.Response:
    return await client.post(UPLOAD, data={"file_type": file_type, "user_id": user_id}, files={"file": (name, data)})


def assert_error(resp: httpx.Response, status: int, code: str, field: str | None = None) -> None:
    assert resp.status_code == status, resp.text
    error = resp.json()["error"]
    assert error["code"] == code and error["message"], error
    if field is not None:
        assert error["field"] == field, error


async def test_upload_answers_source_url_and_key_and_serves_the_bytes_to_the_owner_only(client):
    png = _png()
    resp = await upload(client, png, "image", name="photo.mp3")  # the name is ignored: the bytes are a PNG
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["source_url"] == f"/api/v1/media/{body['object_key']}"
    assert body["object_key"].startswith("image/") and body["object_key"].endswith(".png")
    assert (body["file_type"], body["content_type"], body["bytes"]) == ("image", "image/png", len(png))
    mine = await client.get(body["source_url"], params={"user_id": "u1"})
    assert mine.status_code == 200 and mine.content == png and mine.headers["content-type"] == "image/png"
    by_header = await client.get(body["source_url"], headers={"X-User-Id": "u1"})
    assert by_header.status_code == 200 and by_header.content == png
    # another user's object reads exactly as a missing one
    assert_error(await client.get(body["source_url"], params={"user_id": "u2"}), 404, "media_not_found", "object_key")
    assert_error(await client.get(body["source_url"]), 422, "invalid_input", "user_id")
    assert_error(
        await client.get("/api/v1/media/image/" + "0" * 32 + ".png", params={"user_id": "u1"}), 404, "media_not_found"
    )


async def test_an_image_turn_routes_the_recognized_command(client, rig):
    source = (await upload(client, _png())).json()["source_url"]
    resp = await client.post(CHAT, json={"user_id": "u1", "modality": "image_ocr", "source_url": source})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["recognized_text"] == "打开车窗" and body["intent"] == "cabin_window_open"
    assert body["recognition"]["lines"][0]["confidence"] > 0.5 and body["timings"]["stages"]["ocr"] > 0
    assert rig[1].texts[-1] == "打开车窗"


async def test_a_voice_turn_transcribes_with_segment_timings(client):
    source = (await upload(client, transcode(speak("open the window"), "webm"), "audio")).json()["source_url"]
    resp = await client.post(CHAT, json={"user_id": "u1", "modality": "voice_asr", "source_url": source})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert "window" in body["recognized_text"].lower(), body["recognized_text"]
    assert (
        body["recognition"]["segments"]
        and body["recognition"]["duration_s"] > 0.5
        and body["recognition"]["language"] == "en"
    )
    assert body["timings"]["stages"]["asr"] > 0 and body["timings"]["budget_ms"] > 8000


@pytest.mark.parametrize(
    ("data", "file_type", "status", "code"),
    [
        (b"%PDF-1.7 a document", "image", 415, "unsupported_media_type"),
        (b"RIFF\x10\x00\x00\x00WAVEfmt ", "image", 415, "unsupported_media_type"),  # audio bytes sent as an image
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "image", 422, "undecodable_media"),
        (b"OggS" + b"\x01" * 100, "audio", 422, "undecodable_media"),
        (b"", "image", 422, "empty_file"),
        (b"", "audio", 422, "empty_file"),
    ],
)
async def test_bad_uploads_are_typed_4xx(client, data, file_type, status, code):
    assert_error(await upload(client, data, file_type), status, code)


async def test_uploads_over_the_limits_are_413(client, rig):
    limit = state_of(rig[0]).uploads.cfg.max_bytes["image"]
    assert_error(await upload(client, b"\x89PNG\r\n\x1a\n" + b"\x00" * limit, "image"), 413, "media_too_large", "file")
    assert_error(await upload(client, silence_wav(21.0), "audio"), 413, "media_too_large", "file")
    # a declared Content-Length far over the limit is refused before the body is parsed
    early = await upload(client, b"\x89PNG\r\n\x1a\n" + b"\x00" * (limit + 200_000), "image")
    assert_error(early, 413, "media_too_large", "file")
    assert early.json()["error"]["message"].startswith("The request is")


def chunked_upload(total: int, chunk: int = 64 * 1024) -> tuple[dict, object, list[int]]:
    """Headers and an async body streaming a `total`-byte PNG-looking file with no Content-Length (chunked), and
    a counter of the bytes the server pulled from it."""
    boundary = "baton-cut-off"
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file_type"\r\n\r\nimage\r\n'
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.png"\r\n'
        f"Content-Type: application/octet-stream\r\n\r\n"
    ).encode() + b"\x89PNG\r\n\x1a\n"
    pulled = [0]

    async def body():
        yield head
        block = b"\x00" * chunk
        while pulled[0] < total:
            pulled[0] += chunk
            yield block

    return {"content-type": f"multipart/form-data; boundary={boundary}"}, body(), pulled


async def test_a_chunked_upload_is_cut_off_where_it_crosses_the_limit(client, rig):
    """No Content-Length to refuse early: the body is counted as it arrives and refused the moment it passes the
    limit (plus the form's framing), not read whole first (here 300 MB offered)."""
    from serve_app.http.media import FORM_OVERHEAD_BYTES

    limit = max(state_of(rig[0]).uploads.cfg.max_bytes.values())
    headers, body, pulled = chunked_upload(300 * 1024 * 1024)
    resp = await client.post(UPLOAD, content=body, headers={**headers, "user-agent": "test"})
    assert_error(resp, 413, "media_too_large", "file")
    assert resp.json()["error"]["message"].startswith("The upload passed")
    assert limit < pulled[0] <= limit + FORM_OVERHEAD_BYTES + 64 * 1024


@pytest.mark.parametrize(
    ("form", "files", "field"),
    [
        ({"user_id": "u1"}, {"file": ("a.png", b"x")}, "file_type"),
        ({"file_type": "image"}, {"file": ("a.png", b"x")}, "user_id"),
        ({"file_type": "video", "user_id": "u1"}, {"file": ("a.png", b"x")}, "file_type"),
        ({"file_type": "image", "user_id": "u1"}, {}, "file"),
        ({"file_type": "image", "user_id": "u1", "file": "not a file part"}, {}, "file"),
        ({"file_type": "image", "user_id": "u1", "caption": "hi"}, {"file": ("a.png", b"x")}, "caption"),
    ],
)
async def test_missing_or_extra_upload_fields_are_422(client, form, files, field):
    resp = await client.post(UPLOAD, data=form, files=files or None)
    assert resp.status_code == 422, resp.text
    assert resp.json()["error"]["field"] == field


async def test_silence_and_a_blank_image_are_refused_and_no_turn_runs(client, rig):
    models = rig[1]
    before = len(models.texts)
    quiet = (await upload(client, silence_wav(2.0), "audio")).json()["source_url"]
    assert_error(
        await client.post(CHAT, json={"user_id": "u1", "modality": "voice_asr", "source_url": quiet}),
        422,
        "no_speech",
        "source_url",
    )
    blank = (await upload(client, blank_png(), "image")).json()["source_url"]
    assert_error(
        await client.post(CHAT, json={"user_id": "u1", "modality": "image_ocr", "source_url": blank}),
        422,
        "no_text",
        "source_url",
    )
    assert len(models.texts) == before


async def test_someone_elses_object_wrong_kind_and_foreign_urls_are_refused(client, rig):
    models = rig[1]
    before = len(models.texts)
    image = (await upload(client, _png(), "image", user_id="owner")).json()["source_url"]

    def chat(body: dict):
        return client.post(CHAT, json={"user_id": "intruder", **body})

    assert_error(await chat({"modality": "image_ocr", "source_url": image}), 403, "media_forbidden", "source_url")
    assert_error(
        await client.post(CHAT, json={"user_id": "owner", "modality": "voice_asr", "source_url": image}),
        422,
        "media_kind_mismatch",
        "source_url",
    )
    assert_error(
        await chat({"modality": "image_ocr", "source_url": "https://example.com/a.png"}),
        422,
        "foreign_source_url",
        "source_url",
    )
    missing = "/api/v1/media/image/" + "f" * 32 + ".png"
    assert_error(await chat({"modality": "image_ocr", "source_url": missing}), 404, "media_not_found", "source_url")
    assert len(models.texts) == before


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"modality": "image_ocr"}, "source_url"),
        (
            {"modality": "voice_asr", "source_url": "/api/v1/media/audio/" + "a" * 32 + ".wav", "text": "打开车窗"},
            "text",
        ),
        (
            {"modality": "text", "source_url": "/api/v1/media/image/" + "a" * 32 + ".png", "text": "打开车窗"},
            "source_url",
        ),
        ({"modality": "video", "source_url": "/x"}, "modality"),
        ({"modality": "image_ocr", "source_url": 12}, "source_url"),
    ],
)
async def test_the_modality_table_over_http(client, body, field):
    resp = await client.post(CHAT, json={"user_id": "u1", **body})
    assert resp.status_code == 422 and resp.json()["error"]["field"] == field, resp.text
