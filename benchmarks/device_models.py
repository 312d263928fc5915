"""`python -m benchmarks.device_models --device cuda`: each model class loaded where its setting puts it, and timed.

The encoder (torch: one text, then a batch of 32), Whisper (the committed warm-up clip) and OCR (the committed
warm-up image), each through the same class a replica uses, with its device setting set to `--device`. Model paths
come from baton.yaml (the shipped small models) or, with `--serve-config`, from that config's overrides (the GPU
cluster's checkpoints). A class whose device this machine lacks is reported with the reason instead of a time.
`scripts/gpu_smoke.sh` runs it on a GPU machine that has torch with CUDA but no Ray Serve LLM stack.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from config.settings import Settings, load_settings, merged
from deployments.devices import DeviceUnavailable

ROOT = Path(__file__).resolve().parent.parent
TEXTS = ["打开车窗", "把空调调到二十二度", "导航去最近的加油站然后播放音乐", "查一下订单12345的物流"]
MODELS = ("encoder", "asr", "ocr")


def _timed(run: Callable[[], object], rounds: int) -> dict[str, float]:
    run()  # the first call pays for lazy initialisation (CUDA kernels, allocator): not a served turn's cost
    times = []
    for _ in range(rounds):
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1000.0)
    return {
        "p50_ms": round(statistics.median(times), 2),
        "min_ms": round(min(times), 2),
        "max_ms": round(max(times), 2),
    }


def _encoder(settings: Settings, rounds: int) -> dict:
    from deployments.encoder import Encoder

    t0 = time.perf_counter()
    encoder = Encoder(path=settings.encoder_path, cfg=settings.models, state_dir=settings.state_dir)
    load_s = time.perf_counter() - t0
    batch = [[TEXTS[i % len(TEXTS)]] for i in range(32)]
    return {
        "load_s": round(load_s, 2),
        "batch_1": _timed(lambda: encoder.encode([TEXTS[:1]]), rounds),
        "batch_32": _timed(lambda: encoder.encode(batch), rounds),
    }


def _asr(settings: Settings, rounds: int) -> dict:
    from deployments.asr import WARMUP_AUDIO, SpeechRecognizer
    from deployments.whisper import bootstrap_whisper

    path = settings.whisper_path if settings.asr.model_path else bootstrap_whisper(settings.state_dir)
    model = SpeechRecognizer(model_path=path, cfg=settings.asr, max_audio_s=settings.media.max_audio_s)
    audio = WARMUP_AUDIO.read_bytes()
    return {"clip": _timed(lambda: model.transcribe(audio), rounds), "text": model.transcribe(audio).recognized_text}


def _ocr(settings: Settings, rounds: int) -> dict:
    from deployments.ocr import WARMUP_IMAGE, ImageTextRecognizer

    model = ImageTextRecognizer(cfg=settings.ocr, max_image_pixels=settings.media.max_image_pixels)
    image = WARMUP_IMAGE.read_bytes()
    return {"image": _timed(lambda: model.recognize(image), rounds), "text": model.recognize(image).recognized_text}


RUNS = {"encoder": _encoder, "asr": _asr, "ocr": _ocr}


def on_device(settings: Settings, device: str) -> Settings:
    """The settings with every model class on `device` (the encoder through torch, Whisper in float16 on a GPU)."""
    gpu = device.startswith("cuda")
    return settings.model_copy(
        update={
            "models": settings.models.model_copy(
                update={"device": device, "encoder_runtime": "torch" if gpu else settings.models.encoder_runtime}
            ),
            "asr": settings.asr.model_copy(
                update={
                    "device": "cuda" if gpu else device,
                    "compute_type": "float16" if gpu else settings.asr.compute_type,
                }
            ),
            "ocr": settings.ocr.model_copy(update={"device": "cuda" if gpu else device}),
        }
    )


def measure(settings: Settings, models: list[str], rounds: int) -> dict:
    out = {}
    for name in models:
        try:
            out[name] = RUNS[name](settings, rounds)
        except DeviceUnavailable as exc:
            out[name] = {"unavailable": str(exc)}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.device_models", description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="cpu, cuda or cuda:N")
    parser.add_argument(
        "--serve-config", type=Path, default=None, help="take model paths from this Serve config's overrides"
    )
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--out", type=Path, default=None, help="also write device_models.json here")
    args = parser.parse_args(argv)

    from models.build import serve_overrides

    overrides = serve_overrides(args.serve_config) if args.serve_config else {}
    # the paths alone: where each model runs is --device's business
    paths = {
        "models": {k: v for k, v in overrides.get("models", {}).items() if k in ("encoder", "heads")},
        "asr": {k: v for k, v in overrides.get("asr", {}).items() if k == "model_path"},
    }
    settings = on_device(load_settings(ROOT / "config", {}, merged({}, paths)), args.device)
    result = {"device": args.device, "rounds": args.rounds, "models": measure(settings, args.models, args.rounds)}
    print(json.dumps(result, indent=1, ensure_ascii=False))
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "device_models.json").write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    unavailable = [name for name, r in result["models"].items() if "unavailable" in r]
    return 1 if unavailable else 0


if __name__ == "__main__":
    raise SystemExit(main())
