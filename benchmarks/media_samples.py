"""Test and benchmark media made on the spot: Chinese text rendered with Debian's CJK fonts, English speech from
espeak-ng.

Also the error rates both use: character error rate (CER) for OCR and word error rate (WER) for ASR.
"""

from __future__ import annotations

import io
import random
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np

# (file, face index of the Simplified Chinese face) from fonts-noto-cjk and fonts-wqy-zenhei
FONTS = (
    ("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc", 2),
    ("/usr/share/fonts/opentype/noto/NotoSerifCJK-Regular.ttc", 2),
    ("/usr/share/fonts/truetype/wqy/wqy-zenhei.ttc", 0),
    ("/usr/share/fonts/opentype/noto/NotoSansCJK-Bold.ttc", 2),
)

OCR_TEXTS = (
    "打开车窗",
    "把空调调到二十二度",
    "导航去最近的加油站",
    "座椅加热帮我关掉",
    "播放周杰伦的歌",
    "明天下午三点提醒我开会",
    "查一下我的快递到哪了",
    "关闭天窗",
    "音量调大一点",
    "打开前挡风玻璃除雾",
    "锁上车门",
    "下一首歌",
    "帮我取消订单",
    "后视镜折叠",
)

SPEECH_PHRASES = (
    "open the window",
    "turn on the air conditioning",
    "play some music",
    "navigate to the airport",
    "close the sunroof",
    "turn up the volume",
    "lock the doors",
    "please call customer service",
    "where is my package",
    "turn off the lights",
    "find the nearest gas station",
    "cancel my order",
)
VOICES = ("en-us", "en", "en-us+f3", "en+m3")


@dataclass(frozen=True)
class RenderedText:
    text: str
    png: bytes
    font: str
    size: int
    angle: float
    blur: float
    noise: float


def available_fonts() -> list[tuple[str, int]]:
    fonts = [(path, index) for path, index in FONTS if Path(path).exists()]
    if not fonts:
        raise RuntimeError("No CJK font found: install fonts-noto-cjk and fonts-wqy-zenhei (`make setup` does).")
    return fonts


def render_text(
    text: str,
    *,
    font: tuple[str, int],
    size: int,
    angle: float = 0.0,
    blur: float = 0.0,
    noise: float = 0.0,
    seed: int = 0,
) -> bytes:
    """PNG of `text` in dark ink on a light page, optionally rotated (degrees), blurred (radius) and noised (sigma)."""
    from PIL import Image, ImageDraw, ImageFilter, ImageFont

    face = ImageFont.truetype(font[0], size, index=font[1])
    left, top, right, bottom = face.getbbox(text)
    pad = size
    image = Image.new("RGB", (right - left + 2 * pad, bottom - top + 2 * pad), (250, 250, 246))
    ImageDraw.Draw(image).text((pad - left, pad - top), text, font=face, fill=(20, 20, 30))
    if angle:
        image = image.rotate(angle, resample=Image.BICUBIC, expand=True, fillcolor=(250, 250, 246))
    if blur:
        image = image.filter(ImageFilter.GaussianBlur(blur))
    if noise:
        pixels = np.asarray(image).astype(np.float32)
        pixels += np.random.default_rng(seed).normal(0.0, noise, pixels.shape)
        image = Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))
    out = io.BytesIO()
    image.save(out, format="PNG")
    return out.getvalue()


def ocr_samples(count: int = len(OCR_TEXTS), *, seed: int = 7) -> list[RenderedText]:
    """`count` rendered images cycling through fonts, sizes 22-48 px, rotation up to ±4°, blur up to 1 px, noise up
    to σ 12."""
    rng = random.Random(seed)
    fonts = available_fonts()
    samples = []
    for i in range(count):
        text = OCR_TEXTS[i % len(OCR_TEXTS)]
        font = fonts[i % len(fonts)]
        size, angle = rng.choice((22, 28, 32, 40, 48)), round(rng.uniform(-4.0, 4.0), 1)
        blur, noise = round(rng.uniform(0.0, 1.0), 2), round(rng.uniform(0.0, 12.0), 1)
        png = render_text(text, font=font, size=size, angle=angle, blur=blur, noise=noise, seed=seed + i)
        samples.append(RenderedText(text, png, Path(font[0]).name, size, angle, blur, noise))
    return samples


def blank_png(width: int = 320, height: int = 120) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (width, height), (255, 255, 255)).save(out, format="PNG")
    return out.getvalue()


def speak(text: str, *, voice: str = "en-us", words_per_minute: int = 150) -> bytes:
    """WAV bytes of `text` spoken by espeak-ng."""
    exe = shutil.which("espeak-ng")
    if exe is None:
        raise RuntimeError("espeak-ng is not installed (`make setup` installs it).")
    return subprocess.run(
        [exe, "-v", voice, "-s", str(words_per_minute), "--stdout", text], check=True, capture_output=True, timeout=30
    ).stdout


def speech_samples(count: int = len(SPEECH_PHRASES)) -> list[tuple[str, str, bytes]]:
    """(phrase, voice, wav) for `count` phrases, cycling through voices and speaking rates 140-170 wpm."""
    return [
        (
            phrase,
            VOICES[i % len(VOICES)],
            speak(phrase, voice=VOICES[i % len(VOICES)], words_per_minute=140 + 10 * (i % 4)),
        )
        for i, phrase in enumerate(SPEECH_PHRASES[:count])
    ]


def silence_wav(seconds: float = 2.0, rate: int = 16000) -> bytes:
    import wave

    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\x00\x00" * int(seconds * rate))
    return out.getvalue()


# container -> (PyAV format, codec, sample rate)
ENCODINGS = {
    "mp3": ("mp3", "libmp3lame", 22050),
    "m4a": ("ipod", "aac", 22050),
    "webm": ("webm", "libopus", 48000),
    "ogg": ("ogg", "libopus", 48000),
    "flac": ("flac", "flac", 22050),
}


def transcode(wav: bytes, container: str) -> bytes:
    """Re-encode WAV bytes as mp3, m4a (AAC), webm (Opus), ogg (Opus) or flac with PyAV."""
    import av

    fmt, codec, rate = ENCODINGS[container]
    out = io.BytesIO()
    with av.open(io.BytesIO(wav)) as src, av.open(out, mode="w", format=fmt) as dst:
        stream = dst.add_stream(codec, rate=rate, layout="mono")
        resampler = av.AudioResampler(format=stream.codec_context.codec.audio_formats[0].name, layout="mono", rate=rate)
        for frame in src.decode(audio=0):
            for piece in resampler.resample(frame):
                dst.mux(stream.encode(piece))
        for piece in resampler.resample(None):
            dst.mux(stream.encode(piece))
        dst.mux(stream.encode(None))
    return out.getvalue()


def edit_distance(ref: list[str] | str, hyp: list[str] | str) -> int:
    prev = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        cur = [i] + [0] * len(hyp)
        for j, h in enumerate(hyp, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (r != h))
        prev = cur
    return prev[-1]


def cer(refs: list[str], hyps: list[str]) -> float:
    """Character error rate over a corpus, ignoring whitespace."""

    def strip(s: str) -> str:
        return re.sub(r"\s+", "", s)

    errors = sum(edit_distance(strip(r), strip(h)) for r, h in zip(refs, hyps, strict=True))
    return errors / sum(len(strip(r)) for r in refs)


def words(text: str) -> list[str]:
    return re.sub(r"[^a-z0-9' ]+", " ", text.lower()).split()


def wer(refs: list[str], hyps: list[str]) -> float:
    """Word error rate over a corpus, case and punctuation ignored."""
    errors = sum(edit_distance(words(r), words(h)) for r, h in zip(refs, hyps, strict=True))
    return errors / sum(len(words(r)) for r in refs)
