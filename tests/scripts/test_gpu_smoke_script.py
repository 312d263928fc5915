"""scripts/gpu_smoke.sh picks its mode from what the machine has, and says so plainly where it cannot run."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "gpu_smoke.sh"


def run(path_dirs: list[Path]) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": os.pathsep.join(map(str, path_dirs)), "PYTHON": sys.executable}
    return subprocess.run(["/bin/bash", str(SCRIPT)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def test_without_a_gpu_it_stops_with_a_clear_message():
    proc = run([Path("/usr/bin"), Path("/bin")])  # no nvidia-smi there on this machine
    assert proc.returncode == 2, proc.stderr
    assert "no NVIDIA GPU on this machine" in proc.stderr and "Traceback" not in proc.stderr + proc.stdout


def test_a_gpu_without_cuda_torch_or_vllm_is_named_not_a_stack_trace(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nvidia-smi").write_text("#!/bin/sh\necho 'GPU 0: NVIDIA L4 (UUID: GPU-0000)'\n", encoding="utf-8")
    (fake / "nvidia-smi").chmod(0o755)
    import torch

    proc = run([fake, Path("/usr/bin"), Path("/bin")])
    assert "GPU 0: NVIDIA L4" in proc.stdout
    if torch.cuda.is_available():  # a real CUDA build here: the script times the models instead
        assert "timing each model class on the GPU" in proc.stdout
    else:
        assert proc.returncode == 3, proc.stderr
        assert "neither Ray Serve with vLLM nor torch built with CUDA" in proc.stderr and "Traceback" not in proc.stderr
