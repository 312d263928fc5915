"""Media through the real Serve app: upload over HTTP, the ASR/OCR deployments read the object from the store
themselves."""

from __future__ import annotations

import httpx
import pytest

from benchmarks.media_samples import available_fonts, blank_png, render_text, silence_wav, speak
from tests.support.http_client import served_client

UPLOAD, CHAT = "/api/v1/media/upload", "/api/v1/agent/chat"


@pytest.fixture(scope="module")
def client(serve_app):
    with served_client(serve_app["url"], 30.0) as c:
        yield c


def upload(client, data: bytes, file_type: str, user_id: str = "media-it") -> dict:
    resp = client.post(UPLOAD, data={"file_type": file_type, "user_id": user_id}, files={"file": ("upload", data)})
    assert resp.status_code == 200, resp.text
    return resp.json()


def refused(resp: httpx.Response, status: int, code: str) -> dict:
    assert resp.status_code == status, resp.text
    error = resp.json()["error"]
    assert error["code"] == code and error["message"]
    return error


def test_a_photo_of_a_cockpit_command_routes_to_its_intent(client, cockpit):
    _, settings = cockpit
    png = render_text("打开车窗", font=available_fonts()[1], size=36, angle=-2.5, blur=0.6, noise=6.0)
    media = upload(client, png, "image", user_id="driver-7")
    resp = client.post(CHAT, json={"user_id": "driver-7", "modality": "image_ocr", "source_url": media["source_url"]})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["recognized_text"] == "打开车窗"
    assert body["intent"] == "cabin_window_open" and body["status"] == "completed"
    assert body["result"]["data"]["window_open"] is True
    assert body["timings"]["stages"]["ocr"] > 0 and body["timings"]["degraded"] == []
    assert body["timings"]["budget_ms"] == settings.budgets.stages_ms["ocr"] + settings.budgets.turn_ms["text"]
    assert body["recognition"]["lines"][0]["text"] == "打开车窗"


def test_the_uploaded_object_is_served_back_to_its_owner_only(client):
    png = blank_png(40, 20)
    media = upload(client, png, "image", user_id="owner-1")
    assert client.get(media["source_url"], params={"user_id": "owner-1"}).content == png
    refused(client.get(media["source_url"], params={"user_id": "owner-2"}), 404, "media_not_found")


def test_a_voice_turn_runs_the_asr_deployment(client, cockpit):
    _, settings = cockpit
    # espeak-ng's Mandarin read from pinyin is what Whisper base (configured for Chinese) hears best
    media = upload(
        client,
        speak("ba3 kong1 tiao2 tiao2 dao4 er4 shi2 er4 du4", voice="cmn-latn-pinyin", words_per_minute=110),
        "audio",
    )
    resp = client.post(CHAT, json={"user_id": "media-it", "modality": "voice_asr", "source_url": media["source_url"]})
    assert resp.status_code == 200, resp.text
    body = resp.json()
    assert body["recognition"]["language"] == settings.asr.language and body["recognition"]["segments"]
    assert body["recognized_text"] and body["timings"]["stages"]["asr"] > 0
    assert body["timings"]["budget_ms"] == settings.budgets.turn_ms["voice_asr"]


def test_silence_a_blank_image_and_foreign_urls_are_typed_refusals(client):
    quiet = upload(client, silence_wav(2.0), "audio")["source_url"]
    refused(
        client.post(CHAT, json={"user_id": "media-it", "modality": "voice_asr", "source_url": quiet}), 422, "no_speech"
    )
    blank = upload(client, blank_png(), "image")["source_url"]
    refused(
        client.post(CHAT, json={"user_id": "media-it", "modality": "image_ocr", "source_url": blank}), 422, "no_text"
    )
    refused(
        client.post(CHAT, json={"user_id": "someone-else", "modality": "image_ocr", "source_url": blank}),
        403,
        "media_forbidden",
    )
    refused(
        client.post(
            CHAT,
            json={
                "user_id": "media-it",
                "modality": "image_ocr",
                "source_url": "http://169.254.169.254/latest/meta-data",
            },
        ),
        422,
        "foreign_source_url",
    )
    error = refused(
        client.post(
            CHAT, json={"user_id": "media-it", "modality": "image_ocr", "source_url": blank, "text": "打开车窗"}
        ),
        422,
        "invalid_input",
    )
    assert error["field"] == "text"


@pytest.mark.parametrize(
    ("data", "file_type", "status", "code"),
    [
        (b"GIF89a" + b"\x00" * 32, "image", 415, "unsupported_media_type"),
        (b"\xff\xd8\xff\xe0" + b"\x00" * 64, "image", 422, "undecodable_media"),
        (b"", "audio", 422, "empty_file"),
    ],
)
def test_bad_uploads_are_refused_by_the_served_app(client, data, file_type, status, code):
    resp = client.post(UPLOAD, data={"file_type": file_type, "user_id": "media-it"}, files={"file": ("f", data)})
    refused(resp, status, code)


def _account(client) -> dict:
    import uuid

    resp = client.post(
        "/api/v1/auth/register", json={"email": f"{uuid.uuid4().hex[:10]}@example.com", "password": "media-pass-1"}
    )
    assert resp.status_code == 201, resp.text
    return {"user_id": resp.json()["user_id"], "headers": {"Authorization": f"Bearer {resp.json()['access_token']}"}}


def test_with_a_token_media_belongs_to_the_account_and_the_turn_is_logged_as_recognized(client):
    owner, other = _account(client), _account(client)
    png = render_text("关闭车窗", font=available_fonts()[0], size=40)
    resp = client.post(UPLOAD, data={"file_type": "image"}, files={"file": ("f", png)}, headers=owner["headers"])
    assert resp.status_code == 200, resp.text
    url = resp.json()["source_url"]
    assert client.get(url, headers=owner["headers"]).content == png
    refused(client.get(url, headers=other["headers"]), 404, "media_not_found")
    turn = client.post(
        CHAT,
        json={"user_id": owner["user_id"], "modality": "image_ocr", "source_url": url, "client_message_id": "img-1"},
        headers=owner["headers"],
    )
    assert turn.status_code == 200 and turn.json()["intent"] == "cabin_window_close", turn.text
    logged = client.get("/api/v1/conversation/messages", headers=owner["headers"]).json()["messages"][0]
    assert (logged["modality"], logged["source_url"], logged["raw_content"]) == ("image_ocr", url, "关闭车窗")
