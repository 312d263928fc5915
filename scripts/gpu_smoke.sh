#!/usr/bin/env bash
# Smoke test on a machine with NVIDIA GPUs (README, "GPU smoke test"):
#   Ray Serve and vLLM installed  -> deploys config/serve_gpu.yaml here and runs the benchmark's quick scenario
#                                    (python -m benchmarks.gpu_smoke; --shipped-models without the cluster's checkpoints)
#   only torch with CUDA          -> loads each model class with device cuda and reports its latency
#                                    (python -m benchmarks.device_models --device cuda)
#   no GPU                        -> says so and stops (exit 2)
# Extra arguments go to the Python command. PYTHON picks the interpreter (default .venv/bin/python).
set -uo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-.venv/bin/python}"
[ -x "$PY" ] || PY="$(command -v python3)"

gpus="$(nvidia-smi -L 2>/dev/null | grep '^GPU' || true)"
if [ -z "$gpus" ]; then
    echo "gpu_smoke: no NVIDIA GPU on this machine (nvidia-smi lists none): nothing to smoke-test here; run it on a GPU node." >&2
    exit 2
fi
echo "$gpus"
if "$PY" -c 'import ray.serve, vllm' >/dev/null 2>&1; then
    echo "gpu_smoke: Ray Serve and vLLM found: deploying config/serve_gpu.yaml on this machine"
    exec "$PY" -m benchmarks.gpu_smoke "$@"
fi
if "$PY" -c 'import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
    echo "gpu_smoke: torch with CUDA found (no vLLM): timing each model class on the GPU"
    exec "$PY" -m benchmarks.device_models --device cuda --out benchmarks/results/gpu_smoke "$@"
fi
echo "gpu_smoke: $PY has neither Ray Serve with vLLM nor torch built with CUDA; install one of them (e.g. pip install" \
     "'ray[serve,llm]' vllm, or a CUDA build of torch) and run again." >&2
exit 3
