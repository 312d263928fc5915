"""`python -m benchmarks.media`: ASR real-time factor, OCR latency per image and OCR character accuracy on this machine.

Runs the recognizers the ASR/OCR deployments serve (same config, one thread each) in this process on media made
on the spot: espeak-ng English phrases (one at a time and joined into a longer clip) and Chinese commands rendered
with the CJK fonts (several fonts and sizes, slight rotation, blur, noise). Writes
benchmarks/results/media_latency.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import time
from pathlib import Path

import numpy as np

from benchmarks.media_samples import cer, ocr_samples, speech_samples, wer
from config.settings import load_settings
from deployments.asr import SpeechRecognizer
from deployments.ocr import ImageTextRecognizer
from deployments.whisper import bootstrap_whisper
from media.inspect import AUDIO_RATE, decode_audio

ROOT = Path(__file__).resolve().parent.parent


def _ms(values: list[float]) -> dict:
    ordered = sorted(values)
    return {
        "p50": round(statistics.median(ordered), 1),
        "max": round(ordered[-1], 1),
        "mean": round(statistics.fmean(ordered), 1),
    }


def bench_asr(settings, rounds: int) -> dict:
    cfg = settings.asr.model_copy(update={"language": "en", "initial_prompt": ""})
    model = SpeechRecognizer(
        model_path=bootstrap_whisper(settings.state_dir), cfg=cfg, max_audio_s=settings.media.max_audio_s
    )
    model.warmup()
    samples = speech_samples()
    clips = [decode_audio(wav) for _, _, wav in samples]
    gap = np.zeros(int(0.4 * AUDIO_RATE), dtype=np.float32)
    long_clip = np.concatenate([piece for clip in clips for piece in (clip, gap)])
    rows, hyps = [], []
    for _ in range(rounds):
        for clip in clips + [long_clip]:
            t0 = time.perf_counter()
            model.transcribe_samples(clip)
            rows.append((len(clip) / AUDIO_RATE, time.perf_counter() - t0))
        hyps = [model.transcribe_samples(clip).recognized_text for clip in clips]
    short = [(d, s) for d, s in rows if d < 10]
    longer = [(d, s) for d, s in rows if d >= 10]
    return {
        "phrases": len(clips),
        "rounds": rounds,
        "short_clip_audio_s_mean": round(statistics.fmean(d for d, _ in short), 2),
        "short_clip_rtf": round(sum(s for _, s in short) / sum(d for d, _ in short), 3),
        "short_clip_ms": _ms([s * 1000 for _, s in short]),
        "long_clip_audio_s": round(longer[0][0], 2),
        "long_clip_rtf": round(sum(s for _, s in longer) / sum(d for d, _ in longer), 3),
        "long_clip_ms": _ms([s * 1000 for _, s in longer]),
        "english_wer": round(wer([p for p, _, _ in samples], hyps), 4),
        "config": {
            "model": "whisper-base (CTranslate2)",
            "compute_type": cfg.compute_type,
            "beam_size": cfg.beam_size,
            "cpu_threads": cfg.cpu_threads,
            "vad_filter": cfg.vad_filter,
        },
    }


def bench_ocr(settings, rounds: int, images: int) -> dict:
    model = ImageTextRecognizer(cfg=settings.ocr, max_image_pixels=settings.media.max_image_pixels)
    model.warmup()
    samples = ocr_samples(images)
    times, hyps = [], []
    for r in range(rounds):
        for sample in samples:
            t0 = time.perf_counter()
            result = model.recognize(sample.png)
            times.append((time.perf_counter() - t0) * 1000)
            if r == 0:
                hyps.append(result.recognized_text)
    refs = [s.text for s in samples]
    rate = cer(refs, hyps)
    return {
        "images": len(samples),
        "rounds": rounds,
        "ms_per_image": _ms(times),
        "cer": round(rate, 4),
        "character_accuracy": round(1 - rate, 4),
        "exact_images": sum(h == r for h, r in zip(hyps, refs, strict=True)),
        "samples": [
            {
                "text": s.text,
                "font": s.font,
                "size": s.size,
                "angle": s.angle,
                "blur": s.blur,
                "noise": s.noise,
                "got": h,
            }
            for s, h in zip(samples, hyps, strict=True)
        ],
        "config": {"model": "PP-OCRv4 det/cls/rec (rapidocr-onnxruntime)", "threads": settings.ocr.threads},
    }


def _markdown(report: dict) -> str:
    asr, ocr = report["asr"], report["ocr"]
    lines = [
        f"# Media recognition on this machine ({report['machine']}, commit {report['commit']})",
        "",
        "One thread per recognizer, as the ASR/OCR deployments run (`asr.cpu_threads`, `ocr.threads`); "
        f"1-minute load average when it started: {report['load_average_1m_at_start']} (the machine is shared).",
        "",
        "| recognizer | input | latency p50 ms | latency max ms | real-time factor | accuracy |",
        "|---|---|---|---|---|---|",
        f"| ASR (Whisper base, {asr['config']['compute_type']}, beam {asr['config']['beam_size']}) | "
        f"{asr['phrases']} espeak-ng phrases, {asr['short_clip_audio_s_mean']} s mean | "
        f"{asr['short_clip_ms']['p50']} | {asr['short_clip_ms']['max']} | {asr['short_clip_rtf']} | "
        f"WER {asr['english_wer']} |",
        f"| ASR | the phrases joined, {asr['long_clip_audio_s']} s | {asr['long_clip_ms']['p50']} | "
        f"{asr['long_clip_ms']['max']} | {asr['long_clip_rtf']} | |",
        f"| OCR (PP-OCRv4) | {ocr['images']} rendered Chinese commands | {ocr['ms_per_image']['p50']} | "
        f"{ocr['ms_per_image']['max']} | | CER {ocr['cer']} (character accuracy {ocr['character_accuracy']}, "
        f"{ocr['exact_images']}/{ocr['images']} exact) |",
        "",
        "Real-time factor = processing time / audio duration (lower is faster). The images vary font "
        "(Noto Sans/Serif CJK, WenQuanYi Zen Hei), size 22-48 px, rotation up to ±4°, Gaussian blur up to 1 px and "
        "pixel noise up to σ 12.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.media", description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--images", type=int, default=14)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    args = parser.parse_args(argv)
    settings = load_settings(ROOT / "config", os.environ)
    commit = subprocess.run(
        ["git", "rev-parse", "--short=8", "HEAD"], cwd=ROOT, capture_output=True, text=True
    ).stdout.strip()
    report = {
        "commit": commit,
        "machine": f"{os.cpu_count()} cores, {platform.machine()}",
        "load_average_1m_at_start": round(os.getloadavg()[0], 2),
        "asr": bench_asr(settings, args.rounds),
        "ocr": bench_ocr(settings, args.rounds, args.images),
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "media_latency.json").write_text(
        json.dumps(report, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    (args.out / "media_latency.md").write_text(_markdown(report), encoding="utf-8")
    print(_markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
