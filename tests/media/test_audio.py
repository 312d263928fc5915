"""Audio decoded within bounds (issue 34, item 8): a file that declares no length and decodes to gigabytes is refused
while decoding, holding no more than the cap; upload checks run in a pool of their own, under admission."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading

import numpy as np
import pytest

from engine.errors import Overloaded
from engine.media_errors import MediaTooLarge
from media.audio import decode_audio
from media.pool import DecodePool
from tests.support.audio_bomb import decoded_bytes, silent_flac

BOMB_S = 5 * 3600.0
MiB = 1024 * 1024

# a fresh interpreter: its peak RSS before and after the check is the decode's own, whatever this process holds
MEASURE = """
import json, resource, sys, time
from config.settings import load_settings
from media.inspect import inspect_upload
cfg = load_settings().media
data = sys.stdin.buffer.read()
inspect_upload(open(sys.argv[1], "rb").read(), "audio", cfg) if len(sys.argv) > 1 else None  # imports and warms av
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
try:
    inspect_upload(data, "audio", cfg)
    outcome = "accepted"
except Exception as exc:
    outcome = getattr(exc, "code", type(exc).__name__)
seconds = time.perf_counter() - t0
print(json.dumps({"outcome": outcome, "seconds": seconds,
                  "growth_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before}))
"""


def test_the_bomb_is_what_it_claims():
    bomb = silent_flac(BOMB_S)
    assert len(bomb) < 100 * 1024 and decoded_bytes(BOMB_S) >= 1024 * MiB
    samples = decode_audio(silent_flac(30.0), max_s=60)
    assert samples.dtype == np.float32 and len(samples) == 8 * 65535 and not samples.any()  # whole 65,535-sample frames


def test_an_audio_bomb_is_refused_in_two_seconds_growing_memory_by_less_than_200_mib(tmp_path):
    """A bound, not a speed test: decoded whole (today's way) it would take gigabytes and many seconds."""
    warm = tmp_path / "warm.flac"
    warm.write_bytes(silent_flac(1.0))
    done = subprocess.run(
        [sys.executable, "-c", MEASURE, str(warm)],
        input=silent_flac(BOMB_S),
        capture_output=True,
        timeout=120,
        check=True,
    )
    measured = json.loads(done.stdout.decode().strip().splitlines()[-1])
    assert measured["outcome"] == "media_too_large", measured
    assert measured["seconds"] <= 2.0, measured
    assert measured["growth_kib"] < 200 * 1024, measured


def test_every_decode_is_capped_even_when_its_caller_names_no_cap():
    with pytest.raises(MediaTooLarge) as exc:
        decode_audio(silent_flac(BOMB_S))  # the ASR replica's call
    assert exc.value.field == "file" and "600 s" in exc.value.message
    with pytest.raises(MediaTooLarge, match="longer than the limit of 20 s"):
        decode_audio(silent_flac(21.0), max_s=20)


def test_a_decode_that_runs_past_its_time_is_refused():
    with pytest.raises(MediaTooLarge, match="to decode"):
        decode_audio(silent_flac(60.0), max_s=120, timeout_s=0.0)


async def test_the_pool_admits_workers_plus_waiting_and_refuses_the_next_at_once():
    pool, release = DecodePool(workers=1, waiting=1), threading.Event()
    first = asyncio.ensure_future(pool.run(lambda: release.wait(5) and threading.current_thread().name))
    second = asyncio.ensure_future(pool.run(lambda: "queued"))
    await asyncio.sleep(0.05)
    assert pool.held == 2
    with pytest.raises(Overloaded) as exc:
        await pool.run(lambda: "one too many")
    assert exc.value.field == "file"
    release.set()
    name, queued = await asyncio.gather(first, second)
    assert name.startswith("media-check") and queued == "queued" and pool.held == 0


async def test_a_caller_that_leaves_keeps_its_slot_until_the_decode_ends():
    pool, release = DecodePool(workers=1, waiting=0), threading.Event()
    leaving = asyncio.ensure_future(pool.run(lambda: release.wait(5)))
    await asyncio.sleep(0.05)
    leaving.cancel()
    await asyncio.sleep(0.05)
    with pytest.raises(Overloaded):
        await pool.run(lambda: None)  # the thread still decodes: its slot is still taken
    release.set()
    for _ in range(100):
        if pool.held == 0:
            break
        await asyncio.sleep(0.01)
    assert await pool.run(lambda: "free again") == "free again"
