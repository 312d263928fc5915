"""Upload inspection: the format comes from the bytes, then a real decode inside the size, pixel and duration limits."""

from __future__ import annotations

import io

import pytest

from benchmarks.media_samples import ENCODINGS, available_fonts, blank_png, render_text, silence_wav, speak, transcode
from engine.media_errors import EmptyMedia, MediaTooLarge, UndecodableMedia, UnsupportedMediaType
from media.inspect import inspect_upload, sniff


@pytest.fixture(scope="module")
def cfg(cockpit):
    return cockpit[1].media


@pytest.fixture(scope="module")
def wav():
    return speak("open the window")


def _jpeg() -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (64, 32), (200, 10, 10)).save(out, format="JPEG")
    return out.getvalue()


def test_images_are_sniffed_and_measured(cfg):
    png = render_text("打开车窗", font=available_fonts()[0], size=30)
    found = inspect_upload(png, "image", cfg)
    assert (found.kind, found.format, found.content_type) == ("image", "png", "image/png")
    assert found.width > found.height > 0
    assert inspect_upload(_jpeg(), "image", cfg).format == "jpeg"


@pytest.mark.parametrize("container", ["wav", *sorted(ENCODINGS)])
def test_audio_containers_are_sniffed_and_timed(cfg, wav, container):
    data = wav if container == "wav" else transcode(wav, container)
    assert sniff(data) == container
    found = inspect_upload(data, "audio", cfg)
    assert found.kind == "audio" and found.format == container
    assert 0.5 < found.duration_s < 3.0


def test_the_file_name_plays_no_part_only_bytes_do(cfg, wav):
    with pytest.raises(UnsupportedMediaType) as exc:
        inspect_upload(wav, "image", cfg)  # audio bytes declared as an image
    assert exc.value.field == "file_type" and "wav" in exc.value.message
    with pytest.raises(UnsupportedMediaType):
        inspect_upload(blank_png(), "audio", cfg)
    with pytest.raises(UnsupportedMediaType):
        inspect_upload(b"%PDF-1.7 not media at all", "image", cfg)


def test_a_sniffed_format_outside_the_accepted_list_is_refused(cfg):
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (8, 8)).save(out, format="GIF")
    with pytest.raises(UnsupportedMediaType) as exc:
        inspect_upload(out.getvalue(), "image", cfg)
    assert "gif" in exc.value.message


def test_empty_and_oversized_files(cfg, wav):
    with pytest.raises(EmptyMedia):
        inspect_upload(b"", "image", cfg)
    small = cfg.model_copy(update={"max_bytes": {"image": 1000, "audio": 1000}})
    with pytest.raises(MediaTooLarge):
        inspect_upload(wav, "audio", small)


def test_pixel_cap_is_checked_from_the_header(cfg):
    from PIL import Image

    out = io.BytesIO()
    Image.new("L", (6000, 5000), 255).save(out, format="PNG")  # compresses to a few KB
    with pytest.raises(MediaTooLarge) as exc:
        inspect_upload(out.getvalue(), "image", cfg)
    assert "6000x5000" in exc.value.message


def test_duration_cap(cfg, wav):
    with pytest.raises(MediaTooLarge) as exc:
        inspect_upload(silence_wav(21.0), "audio", cfg)
    assert "20 s" in exc.value.message
    short = cfg.model_copy(update={"max_audio_s": 0.5})
    with pytest.raises(MediaTooLarge):
        inspect_upload(transcode(wav, "webm"), "audio", short)


def test_truncated_files_are_undecodable(cfg, wav):
    png = render_text("打开车窗", font=available_fonts()[0], size=30)
    with pytest.raises(UndecodableMedia):
        inspect_upload(png[: len(png) // 2], "image", cfg)
    with pytest.raises(UndecodableMedia):
        inspect_upload(b"RIFF\x10\x00\x00\x00WAVEjunkjunk", "audio", cfg)
    with pytest.raises(UndecodableMedia):
        inspect_upload(b"OggS" + b"\x00" * 200, "audio", cfg)
