"""`python -m benchmarks.encoder_alone`: the encoder timed alone — batch-1 latency and the cost per sentence of a batch.

The runtime Baton serves (`models.encoder_runtime`: onnxruntime here, its session of `threads` intra-op threads,
the export Baton made under the state dir), in the measuring process only: the harness calls
`measure_in_subprocess`, which runs this module as a child and parses the one JSON object it prints
(`benchmarks.schema.EncoderMeasurement`). The encoder is the bundled folder (`settings.encoder_path`), loaded with
the serving path's own `SentenceEncoder`, with the e5 "query: " prefix and normalized embeddings. The ceiling,
1000 / (batch cost per sentence in ms), is the turns/s one encoder process could sustain if every turn were one
sentence in a full batch and nothing else ran.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.stats import distribution, percentile

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SCENARIO = ROOT / "benchmarks" / "scenarios" / "encode_once.yaml"
TIMEOUT_S = 600.0


def measure(
    path: Path | None, texts: list[str], *, threads: int, batch1_turns: int, batch_size: int, rounds: int, warmup: int
) -> dict:
    """Load the encoder in this process as Baton serves it (its runtime, `threads` intra-op threads) and time it;
    returns an EncoderMeasurement dict."""
    import torch

    torch.set_num_threads(threads)
    from config.settings import load_settings
    from deployments.embedding import SentenceEncoder

    if not texts:
        raise ValueError("no texts to encode")
    settings = load_settings(ROOT / "config")
    path = path or settings.encoder_path
    runtime = settings.models.encoder_runtime
    t0 = time.perf_counter()
    model = SentenceEncoder(path, runtime=runtime, threads=threads, batch_size=batch_size, state_dir=settings.state_dir)
    load_s = time.perf_counter() - t0
    queries = list(texts)

    def encode(batch: list[str]) -> float:
        start = time.perf_counter()
        model.encode(batch)
        return (time.perf_counter() - start) * 1000.0

    def rotated(offset: int, n: int) -> list[str]:
        return [queries[(offset + i) % len(queries)] for i in range(n)]

    for i in range(warmup):
        encode([queries[i % len(queries)]])
    if warmup:
        encode(rotated(0, batch_size))
    single = [round(encode([q]), 3) for q in rotated(0, batch1_turns)]
    batches = [round(encode(rotated(r * batch_size, batch_size)), 3) for r in range(rounds)]
    per_sentence = statistics.median(batches) / batch_size
    return {
        "runtime": runtime,
        "threads": threads,
        "torch_version": torch.__version__,
        "encoder_path": str(path),
        "texts": len(texts),
        "load_s": round(load_s, 3),
        "batch1_ms": distribution(single),
        "batch1_samples_ms": single,
        "batch_size": batch_size,
        "batch_rounds_ms": batches,
        "per_sentence_ms": round(per_sentence, 4),
        "ceiling_turns_per_s": round(1000.0 / per_sentence, 2),
        "loadavg_1m": round(os.getloadavg()[0], 2),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def parse_result(stdout: str) -> dict:
    """The measurement from the child's stdout: its last non-empty line, validated (ValueError when absent or
    malformed)."""
    from benchmarks.schema import EncoderMeasurement

    lines = [line for line in stdout.splitlines() if line.strip()]
    if not lines:
        raise ValueError("the encoder-alone process printed nothing")
    try:
        raw = json.loads(lines[-1])
    except ValueError as exc:
        raise ValueError(f"the encoder-alone process did not end with JSON: {lines[-1][:200]!r}") from exc
    return EncoderMeasurement.model_validate(raw).model_dump(mode="json")


def measure_in_subprocess(
    texts: list[str],
    *,
    threads: int,
    batch1_turns: int,
    batch_size: int,
    rounds: int,
    warmup: int,
    timeout_s: float = TIMEOUT_S,
) -> dict:
    """Run `measure` in a child Python (its threads set there only) on `texts`; returns its parsed measurement."""
    cmd = [
        sys.executable,
        "-m",
        "benchmarks.encoder_alone",
        "--stdin",
        "--threads",
        str(threads),
        "--batch1-turns",
        str(batch1_turns),
        "--batch-size",
        str(batch_size),
        "--rounds",
        str(rounds),
        "--warmup",
        str(warmup),
    ]
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": str(threads),
        "MKL_NUM_THREADS": str(threads),
    }
    env.setdefault("BATON_STATE_DIR", str(ROOT / "var"))
    done = subprocess.run(
        cmd,
        cwd=ROOT,
        env=env,
        input=json.dumps(texts, ensure_ascii=False),
        capture_output=True,
        text=True,
        timeout=timeout_s,
    )
    if done.returncode != 0:
        raise RuntimeError(f"encoder-alone process exited with {done.returncode}: {done.stderr[-2000:]}")
    return parse_result(done.stdout)


def pool(start: dict, end: dict | None) -> dict:
    """The figure the ratios use: batch-1 p50 over both runs' samples, the median batch over both runs' rounds."""
    runs = [m for m in (start, end) if m]
    single = [x for m in runs for x in m["batch1_samples_ms"]]
    batches = [x for m in runs for x in m["batch_rounds_ms"]]
    if {m["batch_size"] for m in runs} != {start["batch_size"]}:
        raise ValueError("start and end measured different batch sizes")
    per_sentence = statistics.median(batches) / start["batch_size"]
    return {
        "sources": ["start", "end"][: len(runs)],
        "batch1_p50_ms": round(percentile(single, 50), 3),
        "per_sentence_ms": round(per_sentence, 4),
        "ceiling_turns_per_s": round(1000.0 / per_sentence, 2),
        "end_over_start_batch1_p50": round(end["batch1_ms"]["p50"] / start["batch1_ms"]["p50"], 3) if end else None,
        "end_over_start_per_sentence": round(end["per_sentence_ms"] / start["per_sentence_ms"], 3) if end else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.encoder_alone", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--scenario",
        type=Path,
        default=DEFAULT_SCENARIO,
        help="texts and defaults from this scenario's mix and `encoder_alone` block",
    )
    parser.add_argument("--stdin", action="store_true", help="read the texts as a JSON list from stdin instead")
    parser.add_argument("--path", type=Path, default=None, help="encoder folder (default: settings.encoder_path)")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--batch1-turns", type=int, default=None)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--warmup", type=int, default=None)
    args = parser.parse_args(argv)
    from benchmarks.scenario import EncoderAlone, kind_texts, load_scenario

    if args.stdin:
        spec, texts = EncoderAlone(), json.loads(sys.stdin.read())
    else:
        scenario, mix = load_scenario(args.scenario)
        spec = scenario.encoder_alone or EncoderAlone()
        texts = kind_texts(mix, spec.kind)
    options = {
        key: getattr(args, key) if getattr(args, key) is not None else getattr(spec, key)
        for key in ("threads", "batch1_turns", "batch_size", "rounds", "warmup")
    }
    result = measure(args.path, texts, **options)
    print(json.dumps(result, ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
