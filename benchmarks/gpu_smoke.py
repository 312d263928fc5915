"""`python -m benchmarks.gpu_smoke`: config/serve_gpu.yaml deployed on this one GPU machine, then the benchmark's quick
scenario against it (what `scripts/gpu_smoke.sh` runs where Ray Serve and vLLM are installed).

One machine is not the cluster, so the smoke copy of the config changes only what a single machine needs: no
`accelerator_type` (whatever GPU this is), the token-less local mode and the local media store (the benchmark's turns
carry no token and there is no S3), and loopback HTTP. With `--shipped-models` the encoder and Whisper are the
shipped small ones (still on the GPU), for a machine without the cluster's checkpoints. Missing model folders stop it
with their names before anything starts."""

from __future__ import annotations

import argparse
import copy
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
GPU_CONFIG = ROOT / "config" / "serve_gpu.yaml"
LOCAL = {
    "auth": {"require_token": False, "generate_secret": True},
    "media": {"object_store": {"backend": "local"}},
    "serving": {"metrics_host": "127.0.0.1"},
}


def smoke_config(config: dict[str, Any], *, shipped_models: bool) -> dict[str, Any]:
    """The GPU Serve config as one machine runs it (see the module's docstring for what changes and why)."""
    from config.settings import merged

    out = copy.deepcopy(config)
    out["http_options"] = {**out.get("http_options", {}), "host": "127.0.0.1"}
    for app in out["applications"]:
        overrides = merged(app["args"].get("overrides", {}), LOCAL)
        if shipped_models:
            overrides["models"] = {k: v for k, v in overrides.get("models", {}).items() if k != "encoder"}
            overrides["asr"] = {k: v for k, v in overrides.get("asr", {}).items() if k != "model_path"}
        app["args"]["overrides"] = overrides
        for deployment in app.get("deployments", []):
            (deployment.get("ray_actor_options") or {}).pop("accelerator_type", None)
    return out


def missing_models(config: dict[str, Any]) -> list[str]:
    """The configured model folders (encoder, text-input heads, Whisper) that are not on this machine."""
    overrides = config["applications"][0]["args"].get("overrides", {})
    paths = [
        overrides.get("models", {}).get("encoder"),
        overrides.get("asr", {}).get("model_path"),
        *(h.get("checkpoint") for h in overrides.get("models", {}).get("heads", {}).values()),
    ]
    return [p for p in paths if p and not Path(p).exists()]


def healthy(url: str, server: subprocess.Popen, *, timeout_s: float) -> bool:
    """Poll /health (no Ray connection from here) until it is green, the server exits, or time runs out."""
    deadline = time.time() + timeout_s
    while time.time() < deadline and server.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                if resp.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(2)
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.gpu_smoke", description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=GPU_CONFIG)
    parser.add_argument(
        "--shipped-models", action="store_true", help="the shipped encoder and Whisper base, on the GPU"
    )
    parser.add_argument("--pack", default="cockpit")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "gpu_smoke")
    args = parser.parse_args(argv)

    config = smoke_config(yaml.safe_load(args.config.read_text(encoding="utf-8")), shipped_models=args.shipped_models)
    missing = missing_models(config)
    if missing:
        print(
            f"gpu_smoke: model folders of {args.config.name} are not here: {', '.join(missing)}. Put them there, or "
            f"run with --shipped-models (the shipped encoder and Whisper base, on the GPU).",
            file=sys.stderr,
        )
        return 2
    from serve_app.ops import launcher

    [port] = launcher.free_ports(1)
    args.out.mkdir(parents=True, exist_ok=True)
    smoke = Path(tempfile.mkdtemp(prefix="baton-gpu-smoke-")) / "serve_gpu_smoke.yaml"
    smoke.write_text(yaml.safe_dump(config, sort_keys=False, allow_unicode=True), encoding="utf-8")
    env = {**os.environ, "BATON_PACK": args.pack}
    py = sys.executable
    # the packs' heads are built on the encoder this config serves (on the GPU it names)
    subprocess.run(
        [py, "-m", "models.build", "--pack", args.pack, "--serve-config", str(smoke)], cwd=ROOT, env=env, check=True
    )
    server = subprocess.Popen(
        [py, "-m", "serve_app.ops.launcher", "--config", str(smoke), "--port", str(port)], cwd=ROOT, env=env
    )
    try:
        if not healthy(f"http://127.0.0.1:{port}/health", server, timeout_s=900):
            print(
                f"gpu_smoke: Baton did not become healthy on :{port} (the launcher's output above says why)",
                file=sys.stderr,
            )
            return 1
        bench = [
            py,
            "-m",
            "benchmarks",
            str(ROOT / "benchmarks" / "scenarios" / "default.yaml"),
            "--quick",
            "--url",
            f"baton=http://127.0.0.1:{port}",
            "--out",
            str(args.out),
        ]
        return subprocess.run(bench, cwd=ROOT, env=env).returncode
    finally:
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)


if __name__ == "__main__":
    raise SystemExit(main())
