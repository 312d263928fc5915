"""The encoder-alone result: the child's JSON is parsed and validated, and start + end pool into one figure."""

from __future__ import annotations

import json
import statistics

import pytest

from benchmarks.encoder_alone import parse_result, pool
from benchmarks.stats import distribution


def _measurement(single: list[float], rounds: list[float], batch_size: int = 32) -> dict:
    per = statistics.median(rounds) / batch_size
    return {
        "runtime": "torch",
        "threads": 2,
        "torch_version": "2.13.0+cpu",
        "encoder_path": "var/encoder/multilingual-e5-small",
        "texts": 30,
        "load_s": 3.2,
        "batch1_ms": distribution(single),
        "batch1_samples_ms": single,
        "batch_size": batch_size,
        "batch_rounds_ms": rounds,
        "per_sentence_ms": round(per, 4),
        "ceiling_turns_per_s": round(1000 / per, 2),
        "loadavg_1m": 1.5,
        "measured_at": "2026-01-01T00:00:00Z",
    }


def test_parse_takes_the_last_json_line_of_the_child():
    m = _measurement([10.0, 12.0, 11.0], [320.0, 330.0, 310.0])
    stdout = "some library warning\n" + json.dumps(m) + "\n\n"
    parsed = parse_result(stdout)
    assert parsed["per_sentence_ms"] == 10.0 and parsed["ceiling_turns_per_s"] == 100.0
    assert parsed["batch1_ms"]["p50"] == 11.0


@pytest.mark.parametrize(
    "stdout,message", [("", "printed nothing"), ("Traceback (most recent call last):\n  boom", "did not end with JSON")]
)
def test_parse_refuses_output_without_a_result(stdout, message):
    with pytest.raises(ValueError, match=message):
        parse_result(stdout)


def test_parse_refuses_a_malformed_result():
    m = _measurement([10.0], [320.0])
    del m["ceiling_turns_per_s"]
    with pytest.raises(ValueError, match="ceiling_turns_per_s"):
        parse_result(json.dumps(m))
    bad = {**_measurement([10.0], [320.0]), "per_sentence_ms": 0}
    with pytest.raises(ValueError, match="per_sentence_ms"):
        parse_result(json.dumps(bad))


def test_pool_uses_both_runs_samples():
    start = _measurement([10.0, 10.0, 10.0, 10.0], [320.0, 320.0, 320.0])
    end = _measurement([20.0, 20.0, 20.0, 20.0, 20.0], [640.0, 640.0])
    p = pool(start, end)
    assert p["sources"] == ["start", "end"]
    assert p["batch1_p50_ms"] == 20.0  # nearest rank over 9 samples, 5 of them 20
    assert p["per_sentence_ms"] == 10.0 and p["ceiling_turns_per_s"] == 100.0  # median of 320,320,320,640,640
    assert p["end_over_start_batch1_p50"] == 2.0 and p["end_over_start_per_sentence"] == 2.0


def test_pool_of_the_start_alone_and_mismatched_batches():
    start = _measurement([8.0, 9.0, 10.0], [160.0, 200.0, 240.0])
    p = pool(start, None)
    assert p["sources"] == ["start"] and p["batch1_p50_ms"] == 9.0 and p["per_sentence_ms"] == 6.25
    assert p["end_over_start_batch1_p50"] is None
    with pytest.raises(ValueError, match="batch sizes"):
        pool(start, _measurement([8.0], [160.0], batch_size=16))
