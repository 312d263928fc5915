"""The GPU smoke run's two halves without a GPU: the one-machine copy of the GPU config, and the model classes timed on
a device (on a machine without that device each says why instead of a time)."""

from __future__ import annotations

from pathlib import Path

import yaml

from benchmarks.device_models import measure, on_device
from benchmarks.gpu_smoke import GPU_CONFIG, missing_models, smoke_config


def test_the_smoke_copy_changes_only_what_one_machine_needs():
    source = yaml.safe_load(GPU_CONFIG.read_text(encoding="utf-8"))
    smoke = smoke_config(source, shipped_models=False)
    args = smoke["applications"][0]["args"]["overrides"]
    assert args["auth"]["require_token"] is False and args["media"]["object_store"]["backend"] == "local"
    assert args["models"]["device"] == "cuda" and args["asr"]["device"] == "cuda" and args["ocr"]["device"] == "cuda"
    for deployment in smoke["applications"][0]["deployments"]:
        options = deployment["ray_actor_options"]
        assert "accelerator_type" not in options
        original = next(d for d in source["applications"][0]["deployments"] if d["name"] == deployment["name"])
        assert options.get("num_gpus") == original["ray_actor_options"].get("num_gpus"), deployment["name"]
    assert smoke["http_options"]["host"] == "127.0.0.1"
    assert missing_models(smoke) == [
        p for p in ("/models/bge-base-zh-v1.5", "/models/faster-whisper-large-v3") if not Path(p).exists()
    ]
    shipped = smoke_config(source, shipped_models=True)
    assert missing_models(shipped) == [] and "encoder" not in shipped["applications"][0]["args"]["overrides"]["models"]


def test_every_model_class_is_put_on_the_device_asked_for(cockpit):
    _, settings = cockpit
    gpu = on_device(settings, "cuda")
    assert (gpu.models.device, gpu.models.encoder_runtime, gpu.asr.device, gpu.asr.compute_type, gpu.ocr.device) == (
        "cuda",
        "torch",
        "cuda",
        "float16",
        "cuda",
    )
    import torch

    if not torch.cuda.is_available():
        result = measure(gpu, ["encoder"], rounds=1)
        assert result["encoder"]["unavailable"].startswith("models.device is 'cuda'")
