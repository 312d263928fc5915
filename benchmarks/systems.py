"""Systems under test: Baton (the launcher in a subprocess, with config overrides) or the monolith, or a given URL."""

from __future__ import annotations

import copy
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from benchmarks.scenario import SystemSpec
from serve_app.ops.launcher import free_ports

ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = ROOT / "config"
SERVE_CONFIG = CONFIG_DIR / "serve_local.yaml"
NOT_MODEL_DEPLOYMENTS = ("Orchestrator", "ASR", "OCR", "Planner")
STOP_TIMEOUT_S = 60.0
# Ray starts its workers (every Serve replica) at nice 15; the monolith runs at nice 0. On a machine shared with
# other work that alone starves Baton, so the harness gives Ray workers the monolith's priority.
BATON_ENV = {"RAY_worker_niceness": "0"}
READY_LINE = "Baton is serving"  # what serve_app.ops.launcher prints once its warm-up turn ran every stage


def set_dotted(target: dict, dotted: str, value: Any) -> None:
    *parents, leaf = dotted.split(".")
    for key in parents:
        target = target.setdefault(key, {})
    target[leaf] = value


@dataclass
class RunningSystem:
    spec: SystemSpec
    url: str
    process: subprocess.Popen | None = None
    config: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)

    def stop(self) -> None:
        """SIGTERM: the launcher shuts Serve and Ray down itself; uvicorn exits on it too."""
        if self.process is None or self.process.poll() is not None:
            return
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def serve_config_path(spec: SystemSpec) -> Path:
    """The Serve config a Baton system deploys: its `serve_config` (relative to the repository root) or
    serve_local.yaml."""
    return ROOT / spec.serve_config if spec.serve_config else SERVE_CONFIG


def deployment_names(config: dict[str, Any]) -> list[str]:
    """Every deployment named in a Serve config's applications, in file order."""
    return [d["name"] for app in config.get("applications", []) for d in app.get("deployments", [])]


def model_deployments(spec: SystemSpec) -> list[str]:
    """The deployments of the system's layout that serve the text path's models (all but Orchestrator, ASR, OCR and the
    LLM Planner, which a burst does not scale); in the `inline` layout, the Orchestrator, which runs them."""
    config = yaml.safe_load(serve_config_path(spec).read_text(encoding="utf-8"))
    layout = {**config["applications"][0].get("args", {}), **spec.app_args}.get("layout")
    if layout == "inline":
        return ["Orchestrator"]
    return [name for name in deployment_names(config) if name not in NOT_MODEL_DEPLOYMENTS]


def with_settings(settings: dict[str, Any], source: Path, target: Path) -> Path:
    """Copy the config folder `source` to `target` with the dotted settings overrides in its baton.yaml, and check the
    result loads (engine.settings refuses unknown keys, so a stale override fails here, not in a replica)."""
    from config.settings import load_settings

    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(source, target)
    baton = yaml.safe_load((target / "baton.yaml").read_text(encoding="utf-8"))
    for dotted, value in settings.items():
        set_dotted(baton, dotted, value)
    (target / "baton.yaml").write_text(yaml.safe_dump(baton, allow_unicode=True, sort_keys=False), encoding="utf-8")
    load_settings(target)
    return target


def _config_dir(spec: SystemSpec, workdir: Path) -> Path:
    """config/ itself, or a copy whose baton.yaml carries the system's settings overrides."""
    # absolute: the system runs in its own working directory
    return with_settings(spec.settings, CONFIG_DIR, workdir.resolve() / "config") if spec.settings else CONFIG_DIR


def _serve_config(spec: SystemSpec, config_dir: Path, extra: dict[str, dict[str, Any]]) -> dict[str, Any]:
    config = copy.deepcopy(yaml.safe_load(serve_config_path(spec).read_text(encoding="utf-8")))
    unknown = sorted(set(spec.deployments) - set(deployment_names(config)))
    if unknown:
        raise ValueError(
            f"system {spec.name!r}: deployments {unknown} are not in {serve_config_path(spec).name} "
            f"({', '.join(deployment_names(config))})"
        )
    overrides = {
        name: {**spec.deployments.get(name, {}), **extra.get(name, {})} for name in {*spec.deployments, *extra}
    }
    for app in config["applications"]:
        app.setdefault("args", {}).update({**spec.app_args, "config_dir": str(config_dir)})
        for deployment in app.get("deployments", []):
            for dotted, value in overrides.get(deployment["name"], {}).items():
                set_dotted(deployment, dotted, value)
    return config


def _wait_ready(url: str, process: subprocess.Popen, timeout_s: float, log: Path, ready_line: str | None) -> None:
    """Until /health says ok and, for Baton, the launcher has logged that a warm turn ran every stage in budget."""
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"system exited with {process.returncode} while starting; see {log}")
        if ready_line and ready_line not in log.read_text(encoding="utf-8", errors="replace"):
            time.sleep(1.0)
            continue
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
                if resp.status == 200 and b'"ok"' in resp.read():
                    return
        except OSError:
            pass
        time.sleep(1.0)
    raise TimeoutError(f"{url} did not become healthy within {timeout_s:.0f} s; see {log}")


def start_system(
    spec: SystemSpec,
    *,
    workdir: Path,
    pack: str,
    extra_deployments: dict[str, dict[str, Any]],
    monolith_port: int | None,
    timeout_s: float,
) -> RunningSystem:
    """Start one system as a child process (stopped with SIGTERM); returns once it is warm and healthy."""
    workdir.mkdir(parents=True, exist_ok=True)
    config_dir = _config_dir(spec, workdir)
    port, metrics_port = free_ports(2)
    env = {
        **os.environ,
        "BATON_PACK": pack,
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "BATON_METRICS_PORT": str(metrics_port),
    }
    env.setdefault("BATON_STATE_DIR", str(ROOT / "var"))
    log = workdir / "server.log"
    if spec.kind == "baton":
        config = _serve_config(spec, config_dir, extra_deployments)
        path = workdir / "serve.yaml"
        path.write_text(yaml.safe_dump(config, allow_unicode=True, sort_keys=False), encoding="utf-8")
        cmd = [sys.executable, "-m", "serve_app.ops.launcher", "--config", str(path), "--port", str(port)]
        env.update(BATON_ENV)
    else:
        port = monolith_port or port
        config = {"config_dir": str(config_dir), "port": port}
        cmd = [sys.executable, "-m", "benchmarks.monolith", "--config-dir", str(config_dir), "--port", str(port)]
    with log.open("w") as out:
        process = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    system = RunningSystem(
        spec=spec,
        url=f"http://127.0.0.1:{port}",
        process=process,
        config=config,
        env=BATON_ENV if spec.kind == "baton" else {},
    )
    try:
        _wait_ready(system.url, process, timeout_s, log, READY_LINE if spec.kind == "baton" else None)
    except BaseException:
        system.stop()
        raise
    return system
