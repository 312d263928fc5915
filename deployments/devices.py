"""The device a model runs on, as configured, checked before the model loads onto it: a GPU config on a machine
without that GPU stops with the setting's name and what the runtime sees, not a stack trace from inside a runtime.

Devices are strings from config: `cpu`, `cuda` or `cuda:<index>` for torch (the encoder, a text-input classifier),
`cpu` / `cuda` / `auto` for CTranslate2 (Whisper), `cpu` / `cuda` for onnxruntime (the ONNX encoder, OCR)."""

from __future__ import annotations

CUDA_PROVIDER = "CUDAExecutionProvider"
CPU_PROVIDER = "CPUExecutionProvider"


class DeviceUnavailable(RuntimeError):
    """The configured device is not on this machine (or this build of the runtime cannot use it)."""


def torch_device(device: str, setting: str) -> str:
    """`device` when torch can place a model there."""
    if device == "cpu":
        return device
    import torch

    if not torch.cuda.is_available():
        # torch.backends.cuda.is_built carries no annotations
        built = "with" if torch.backends.cuda.is_built() else "without"  # type: ignore[no-untyped-call]
        raise DeviceUnavailable(
            f"{setting} is {device!r}, but torch {torch.__version__} (built {built} CUDA) sees no CUDA "
            f"device here; set {setting}: cpu or run on a GPU node."
        )
    index = int(device.partition(":")[2] or 0)
    if index >= torch.cuda.device_count():
        raise DeviceUnavailable(
            f"{setting} is {device!r}, but this machine has {torch.cuda.device_count()} CUDA device(s)."
        )
    return device


def ctranslate2_device(device: str, setting: str) -> str:
    """`device` when CTranslate2 can run there (`auto` picks a GPU when there is one)."""
    if device in ("cpu", "auto"):
        return device
    import ctranslate2

    if ctranslate2.get_cuda_device_count() == 0:
        raise DeviceUnavailable(
            f"{setting} is {device!r}, but CTranslate2 {ctranslate2.__version__} sees no CUDA device here."
        )
    return device


def onnx_providers(device: str, setting: str) -> list[str]:
    """onnxruntime execution providers for `device`, the CPU after the GPU (for the few operators it lacks)."""
    if device == "cpu":
        return [CPU_PROVIDER]
    import onnxruntime as ort

    available = ort.get_available_providers()
    if CUDA_PROVIDER not in available:
        raise DeviceUnavailable(
            f"{setting} is {device!r}, but onnxruntime {ort.__version__} has no {CUDA_PROVIDER} here "
            f"(providers: {', '.join(available)}); install onnxruntime-gpu on a GPU node."
        )
    return [CUDA_PROVIDER, CPU_PROVIDER]
