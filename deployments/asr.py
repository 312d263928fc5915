"""SpeechRecognizer: faster-whisper (CTranslate2 Whisper) from audio bytes to recognized text with segment timings."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from config.media import AsrConfig
from deployments.devices import ctranslate2_device
from media.inspect import AUDIO_RATE, decode_audio
from protocol.media import Recognition, Segment

# Real speech (espeak-ng reading pinyin: "把空调调到二十二度", committed): VAD and decoding both run on it
WARMUP_AUDIO = Path(__file__).parent / "assets" / "warmup.flac"


class SpeechRecognizer:
    """Model path, device, compute type, beam size and language come from config (Whisper large on a GPU is a config
    swap)."""

    def __init__(self, *, model_path: Path, cfg: AsrConfig, max_audio_s: float) -> None:
        from faster_whisper import WhisperModel

        self._cfg = cfg
        self._max_audio_s = max_audio_s
        self._model = WhisperModel(
            str(model_path),
            device=ctranslate2_device(cfg.device, "asr.device"),
            compute_type=cfg.compute_type,
            cpu_threads=cfg.cpu_threads,
            num_workers=1,
            local_files_only=True,
        )

    def transcribe(self, data: bytes) -> Recognition:
        t0 = time.perf_counter()
        try:
            samples = decode_audio(data)
        except Exception as exc:  # PyAV's errors for corrupt or non-audio bytes
            return Recognition(status="undecodable", reason=f"The audio does not decode: {exc}.")
        duration = len(samples) / AUDIO_RATE
        if duration <= 0:
            return Recognition(status="undecodable", reason="The audio decodes to no samples.")
        if duration > self._max_audio_s:
            return Recognition(
                status="too_large",
                duration_s=duration,
                reason=f"The audio is {duration:.1f} s long; the limit is {self._max_audio_s:g} s.",
            )
        return self.transcribe_samples(samples, started=t0)

    def transcribe_samples(self, samples: np.ndarray, *, started: float | None = None) -> Recognition:
        t0 = started if started is not None else time.perf_counter()
        cfg = self._cfg
        pieces, info = self._model.transcribe(
            samples,
            language=cfg.language or None,
            beam_size=cfg.beam_size,
            temperature=cfg.temperature,
            initial_prompt=cfg.initial_prompt or None,
            vad_filter=cfg.vad_filter,
            condition_on_previous_text=False,
            no_speech_threshold=cfg.no_speech_threshold,
        )
        segments = [
            Segment(
                start_s=round(s.start, 3),
                end_s=round(s.end, 3),
                text=s.text.strip(),
                no_speech_prob=round(s.no_speech_prob, 4),
            )
            for s in pieces
            if s.text.strip() and s.compression_ratio <= cfg.max_compression_ratio
        ]
        text = " ".join(s.text for s in segments) if _spaced(info.language) else "".join(s.text for s in segments)
        elapsed = round((time.perf_counter() - t0) * 1000.0, 3)
        if not text:
            return Recognition(
                status="no_speech",
                reason="No speech was recognized in the audio.",
                language=info.language,
                duration_s=round(info.duration, 3),
                elapsed_ms=elapsed,
            )
        return Recognition(
            status="ok",
            recognized_text=text,
            language=info.language,
            duration_s=round(info.duration, 3),
            segments=segments,
            elapsed_ms=elapsed,
        )

    def warmup(self) -> None:
        """The whole path once (decode, VAD, Whisper), so the first voice turn runs warm."""
        result = self.transcribe(WARMUP_AUDIO.read_bytes())
        if result.status not in ("ok", "no_speech"):
            raise RuntimeError(f"ASR warm-up failed on {WARMUP_AUDIO.name}: {result.reason}")


def _spaced(language: str | None) -> bool:
    """Languages written without spaces between words join segments directly."""
    return language not in ("zh", "ja", "th", "lo", "my", "yue")
