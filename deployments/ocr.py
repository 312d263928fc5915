"""ImageTextRecognizer: RapidOCR (bundled PP-OCRv4 det/cls/rec on onnxruntime) from image bytes to lines in reading
order."""

from __future__ import annotations

import io
import time
from pathlib import Path

import numpy as np

from config.media import OcrConfig
from deployments.devices import CUDA_PROVIDER, onnx_providers
from protocol.media import Recognition, TextLine

# A real line of text (rendered once, committed): a blank image would not run the recognition model at all
WARMUP_IMAGE = Path(__file__).parent / "assets" / "warmup.png"


class ImageTextRecognizer:
    def __init__(self, *, cfg: OcrConfig, max_image_pixels: int) -> None:
        from rapidocr_onnxruntime import RapidOCR

        self._cfg = cfg
        self._max_pixels = max_image_pixels
        gpu = onnx_providers(cfg.device, "ocr.device")[0] == CUDA_PROVIDER
        self._engine = RapidOCR(
            intra_op_num_threads=cfg.threads,
            inter_op_num_threads=1,
            max_side_len=cfg.max_side,
            det_use_cuda=gpu,
            cls_use_cuda=gpu,
            rec_use_cuda=gpu,
        )

    def recognize(self, data: bytes) -> Recognition:
        t0 = time.perf_counter()
        try:
            image = _decode(data, self._max_pixels)
        except _TooLarge as exc:
            return Recognition(status="too_large", reason=str(exc))
        except Exception as exc:  # Pillow raises many types for corrupt files
            return Recognition(status="undecodable", reason=f"The image does not decode: {exc}.")
        return self.recognize_array(image, started=t0)

    def recognize_array(self, image: np.ndarray, *, started: float | None = None) -> Recognition:
        """`image` is RGB uint8 (H, W, 3)."""
        t0 = started if started is not None else time.perf_counter()
        found, _ = self._engine(image[:, :, ::-1].copy())  # RapidOCR takes OpenCV's BGR order
        lines = [
            TextLine(text=text.strip(), confidence=round(float(score), 4), box=[[float(x), float(y)] for x, y in box])
            for box, text, score in (found or [])
            if text.strip() and score >= self._cfg.min_confidence
        ]
        lines = reading_order(lines, self._cfg.line_overlap)
        elapsed = round((time.perf_counter() - t0) * 1000.0, 3)
        if not lines:
            return Recognition(status="no_text", reason="No text was found in the image.", elapsed_ms=elapsed)
        return Recognition(
            status="ok",
            recognized_text="\n".join(_rows_text(lines, self._cfg.line_overlap)),
            lines=lines,
            elapsed_ms=elapsed,
        )

    def warmup(self) -> None:
        """Detection, angle classification and recognition once each, so the first image turn runs warm."""
        result = self.recognize(WARMUP_IMAGE.read_bytes())
        if result.status != "ok":
            raise RuntimeError(f"OCR warm-up found no text in {WARMUP_IMAGE.name}: {result.reason}")


class _TooLarge(Exception):
    pass


def _decode(data: bytes, max_pixels: int) -> np.ndarray:
    from PIL import Image, ImageOps

    with Image.open(io.BytesIO(data)) as image:
        if image.size[0] * image.size[1] > max_pixels:
            raise _TooLarge(f"The image is {image.size[0]}x{image.size[1]} pixels; the limit is {max_pixels}.")
        upright = ImageOps.exif_transpose(image)
        return np.asarray(upright.convert("RGB"))


def _span(line: TextLine) -> tuple[float, float]:
    ys = [p[1] for p in line.box]
    return min(ys), max(ys)


def _same_row(a: TextLine, b: TextLine, overlap: float) -> bool:
    (a0, a1), (b0, b1) = _span(a), _span(b)
    shared = min(a1, b1) - max(a0, b0)
    return shared >= overlap * min(a1 - a0, b1 - b0)


def _rows(lines: list[TextLine], overlap: float) -> list[list[TextLine]]:
    rows: list[list[TextLine]] = []
    for line in sorted(lines, key=lambda tl: sum(_span(tl)) / 2):
        if rows and _same_row(rows[-1][0], line, overlap):
            rows[-1].append(line)
        else:
            rows.append([line])
    return [sorted(row, key=lambda tl: min(p[0] for p in tl.box)) for row in rows]


def reading_order(lines: list[TextLine], overlap: float) -> list[TextLine]:
    """Top to bottom by rows (boxes overlapping vertically by `overlap` share a row), left to right within a row."""
    return [line for row in _rows(lines, overlap) for line in row]


def _rows_text(lines: list[TextLine], overlap: float) -> list[str]:
    return [" ".join(tl.text for tl in row) for row in _rows(lines, overlap)]
