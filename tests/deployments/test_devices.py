"""Every model class takes its device from config, and a device this machine lacks stops the class with the setting's
name before anything loads (on a GPU machine the same tests see the model placed there instead)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from config.media import AsrConfig, OcrConfig
from config.models import ModelsConfig
from deployments.asr import SpeechRecognizer
from deployments.devices import (
    CPU_PROVIDER,
    CUDA_PROVIDER,
    DeviceUnavailable,
    ctranslate2_device,
    onnx_providers,
    torch_device,
)
from deployments.encoder import Encoder
from deployments.ocr import ImageTextRecognizer


def _gpus() -> dict[str, bool]:
    import ctranslate2
    import onnxruntime
    import torch

    return {
        "torch": torch.cuda.is_available(),
        "ctranslate2": ctranslate2.get_cuda_device_count() > 0,
        "onnx": CUDA_PROVIDER in onnxruntime.get_available_providers(),
    }


GPUS = _gpus()


def test_the_cpu_is_always_there():
    assert torch_device("cpu", "models.device") == "cpu"
    assert ctranslate2_device("cpu", "asr.device") == "cpu" and ctranslate2_device("auto", "asr.device") == "auto"
    assert onnx_providers("cpu", "ocr.device") == [CPU_PROVIDER]


@pytest.mark.parametrize(
    ("check", "runtime", "setting"),
    [
        (torch_device, "torch", "models.device"),
        (ctranslate2_device, "ctranslate2", "asr.device"),
        (onnx_providers, "onnx", "ocr.device"),
    ],
)
def test_a_gpu_is_used_where_there_is_one_and_named_where_there_is_none(check, runtime, setting):
    if GPUS[runtime]:
        assert check("cuda", setting) in ("cuda", [CUDA_PROVIDER, CPU_PROVIDER])
    else:
        with pytest.raises(DeviceUnavailable, match=f"^{setting} is 'cuda', but"):
            check("cuda", setting)


def test_device_strings_are_checked_when_the_config_loads(cockpit):
    _, settings = cockpit
    models = settings.models.model_dump()
    for good in ("cpu", "cuda", "cuda:1"):
        assert ModelsConfig(**{**models, "device": good}).device == good
    for bad in ("gpu", "CUDA", "cuda:", "cuda:x"):
        with pytest.raises(ValidationError, match="device"):
            ModelsConfig(**{**models, "device": bad})
    with pytest.raises(ValidationError, match="device"):
        AsrConfig(**{**settings.asr.model_dump(), "device": "cuda:0"})
    with pytest.raises(ValidationError, match="device"):
        OcrConfig(**{**settings.ocr.model_dump(), "device": "gpu"})


def _expect_device(build, runtime: str, setting: str) -> None:
    if GPUS[runtime]:
        assert build() is not None
    else:
        with pytest.raises(DeviceUnavailable, match=f"^{setting} is 'cuda'"):
            build()


def test_the_encoder_loads_where_models_device_says(cockpit):
    _, settings = cockpit
    for runtime, backend in (("torch", "torch"), ("onnx", "onnx")):
        cfg = settings.models.model_copy(update={"device": "cuda", "encoder_runtime": runtime})
        _expect_device(
            lambda cfg=cfg: Encoder(path=settings.encoder_path, cfg=cfg, state_dir=settings.state_dir),
            backend,
            "models.device",
        )


def test_asr_and_ocr_load_where_their_settings_say(cockpit):
    _, settings = cockpit
    asr = settings.asr.model_copy(update={"device": "cuda", "compute_type": "float16"})
    _expect_device(
        lambda: SpeechRecognizer(model_path=settings.whisper_path, cfg=asr, max_audio_s=20), "ctranslate2", "asr.device"
    )
    ocr = settings.ocr.model_copy(update={"device": "cuda"})
    _expect_device(lambda: ImageTextRecognizer(cfg=ocr, max_image_pixels=10_000), "onnx", "ocr.device")
