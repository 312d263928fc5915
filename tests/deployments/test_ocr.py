"""OCR contract on the real RapidOCR models: accuracy on rendered Chinese, reading order, blank and broken images."""

from __future__ import annotations

import io

import pytest

from benchmarks.media_samples import available_fonts, blank_png, cer, ocr_samples, render_text
from deployments.ocr import ImageTextRecognizer


@pytest.fixture(scope="module")
def ocr(cockpit):
    _, settings = cockpit
    recognizer = ImageTextRecognizer(cfg=settings.ocr, max_image_pixels=settings.media.max_image_pixels)
    recognizer.warmup()
    return recognizer


def test_character_error_rate_on_rendered_images_is_at_most_5_percent(ocr):
    samples = ocr_samples(14)
    assert len({s.font for s in samples}) >= 3 and len({s.size for s in samples}) >= 3
    assert (
        any(abs(s.angle) >= 2 for s in samples)
        and any(s.blur >= 0.5 for s in samples)
        and any(s.noise >= 6 for s in samples)
    )
    results = [ocr.recognize(s.png) for s in samples]
    hyps = [r.recognized_text for r in results]
    rate = cer([s.text for s in samples], hyps)
    print(f"OCR CER {rate:.4f} over {len(samples)} images")
    for s, h in zip(samples, hyps, strict=True):
        if h != s.text:
            print("  ", s.text, "->", h, s.font, s.size, s.angle, s.blur, s.noise)
    assert rate <= 0.05
    assert all(r.status == "ok" for r in results)


def test_lines_come_in_reading_order_with_boxes_and_confidences(ocr):
    from PIL import Image

    font = available_fonts()[0]
    rows = [("关闭天窗", "锁上车门"), ("下一首歌", "音量调大")]
    tiles = {t: Image.open(io.BytesIO(render_text(t, font=font, size=36))) for row in rows for t in row}
    w, h = max(t.width for t in tiles.values()), max(t.height for t in tiles.values())
    page = Image.new("RGB", (2 * w + 80, 2 * h), (250, 250, 246))
    for r, row in enumerate(rows):
        for c, text in enumerate(row):
            page.paste(tiles[text], (c * (w + 80), r * h))
    out = io.BytesIO()
    page.save(out, format="PNG")
    result = ocr.recognize(out.getvalue())
    assert result.status == "ok"
    assert [line.text for line in result.lines] == ["关闭天窗", "锁上车门", "下一首歌", "音量调大"]
    assert result.recognized_text == "关闭天窗 锁上车门\n下一首歌 音量调大"
    for line in result.lines:
        assert len(line.box) == 4 and 0.5 <= line.confidence <= 1.0
    assert result.lines[0].box[0][1] < result.lines[2].box[0][1]  # first row above the second


def test_a_blank_image_has_no_text(ocr):
    result = ocr.recognize(blank_png())
    assert result.status == "no_text" and result.recognized_text == "" and result.reason


@pytest.mark.parametrize("data", [b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, b"not an image at all", b""])
def test_bytes_that_do_not_decode_are_reported_not_raised(ocr, data):
    result = ocr.recognize(data)
    assert result.status == "undecodable" and "does not decode" in result.reason


def test_an_image_over_the_pixel_cap_is_refused_before_decoding(cockpit):
    _, settings = cockpit
    small_cap = ImageTextRecognizer(cfg=settings.ocr, max_image_pixels=100 * 100)
    result = small_cap.recognize(render_text("打开车窗", font=available_fonts()[0], size=40))
    assert result.status == "too_large" and "limit" in result.reason
