"""Audio decoded within bounds: frame by frame, stopping the moment the decoded audio passes its duration cap or the
decode its time cap, so a small file that decodes to hours (a FLAC or Opus of silence declaring no duration) costs
at most the cap's samples in memory and a fraction of a second, never the gigabytes it would expand to."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from typing import Any

import numpy as np

from engine.media_errors import MediaTooLarge, UndecodableMedia

AUDIO_RATE = 16000
# what any decode is held to when its caller names no cap (the ASR replica decodes inspected uploads)
CEILING_S = 600.0
DECODE_TIMEOUT_S = 10.0


def decode_audio(data: bytes, *, max_s: float = CEILING_S, timeout_s: float = DECODE_TIMEOUT_S) -> np.ndarray:
    """Mono float32 samples at 16 kHz (Whisper's input, as faster-whisper decodes it: PyAV, s16 then /32768).

    Raises MediaTooLarge as soon as the audio decoded so far passes `max_s` (holding at most that much) or the decode
    has run `timeout_s`; UndecodableMedia when there is no audio stream. Corrupt packets are skipped."""
    import av

    limit = int(max_s * AUDIO_RATE)
    chunks: list[np.ndarray] = []
    decoded = 0
    give_up = time.monotonic() + timeout_s
    resampler = av.AudioResampler(format="s16", layout="mono", rate=AUDIO_RATE)
    with av.open(io.BytesIO(data), mode="r", metadata_errors="ignore") as container:
        if not container.streams.audio:
            raise UndecodableMedia("The file has no audio stream.", field="file")
        for frame in _frames(container, container.streams.audio[0]):
            for out in _resampled(resampler, frame):
                chunk = out.to_ndarray().reshape(-1)
                decoded += chunk.size
                if decoded > limit:
                    raise MediaTooLarge(f"The audio is longer than the limit of {max_s:g} s.", field="file")
                chunks.append(chunk)
            if time.monotonic() > give_up:
                raise MediaTooLarge(f"The audio takes over {timeout_s:g} s to decode.", field="file")
        for out in _resampled(resampler, None):
            chunks.append(out.to_ndarray().reshape(-1))
    samples = np.concatenate(chunks)[:limit] if chunks else np.zeros(0, dtype=np.int16)
    return samples.astype(np.float32) / 32768.0


def _frames(container: Any, stream: Any) -> Iterator[Any]:
    """The stream's frames one packet at a time; a packet that does not decode is skipped, as faster-whisper does."""
    import av

    for packet in container.demux(stream):
        try:
            yield from packet.decode()
        except av.error.InvalidDataError:
            continue


def _resampled(resampler: Any, frame: Any) -> list[Any]:
    if frame is not None:
        frame.pts = None  # a stream's odd timestamps are no reason to refuse it
    return list(resampler.resample(frame))
