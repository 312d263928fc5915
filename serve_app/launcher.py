"""`python -m serve_app.launcher`: start Ray and Serve on loopback, deploy a Serve config, stay up until signalled.

The config is the standard Serve YAML; the launcher pins paths to absolute ones (replicas do not share the
driver's working directory), applies `BATON_PACK` / `BATON_STATE_DIR` to the app args and forwards
`BATON_FAULTS`, `BATON_METRICS_PORT`, `DATABASE_URL` and `BATON_AUTH_SECRET` to the replicas, then deploys it
exactly as `serve run` does. Without `DATABASE_URL` it starts an embedded PostgreSQL under the state dir
and stops it on exit.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import sys
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from deployments.faults import FaultSet
from serve_app.metrics import MULTIPROC_ENV
from serve_app.proxy_envelope import CALLBACK as PROXY_CALLBACK
from store.embedded import EmbeddedPostgres

FORWARDED_ENV = ("BATON_FAULTS", "BATON_METRICS_PORT", "DATABASE_URL", "BATON_AUTH_SECRET")
APP_NAME = "baton"
WARMUP_USER = "__warmup__"
WARMUP_TEXT = "麻烦帮我看看现在的情况"  # not social, so every model stage runs


def load_serve_config(path: Path, env: Mapping[str, str], *, port: int | None = None) -> dict[str, Any]:
    """The Serve config with absolute paths, env-selected pack/state dir, forwarded env vars and an optional port."""
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    root = path.resolve().parent.parent
    if port is not None:
        config.setdefault("http_options", {})["port"] = port
    for app in config["applications"]:
        args = app.setdefault("args", {})
        args["config_dir"] = str((root / args.get("config_dir", "config")).resolve())
        args["state_dir"] = str((root / (env.get("BATON_STATE_DIR") or args.get("state_dir", "var"))).resolve())
        if env.get("BATON_PACK"):
            args["pack"] = env["BATON_PACK"]
        env_vars = app.setdefault("runtime_env", {}).setdefault("env_vars", {})
        env_vars.update({k: env[k] for k in FORWARDED_ENV if env.get(k)})
        port_id = config.get("http_options", {}).get("port", 8000)
        env_vars[MULTIPROC_ENV] = str(Path(args["state_dir"]) / "metrics" / str(port_id))
    return config


def start(config: dict[str, Any], *, num_cpus: int | None = None) -> None:
    """Start Ray (no dashboard) and Serve, and submit the config; returns once submitted."""
    import ray
    from ray.serve._private import api as serve_api
    from ray.serve._private.constants import SERVE_NAMESPACE
    from ray.serve.schema import ServeDeploySchema

    schema = ServeDeploySchema.model_validate(config)
    for app in config["applications"]:
        metrics_dir = Path(app["runtime_env"]["env_vars"][MULTIPROC_ENV])
        if not ray.is_initialized():
            # samples of a previous run on this port would be summed into this one's; a redeploy keeps them
            shutil.rmtree(metrics_dir, ignore_errors=True)
        metrics_dir.mkdir(parents=True, exist_ok=True)
    if not ray.is_initialized():
        # the proxy (a Ray worker started below) inherits this: its own sheds get Baton's error envelope
        os.environ["RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH"] = PROXY_CALLBACK
        ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False, namespace=SERVE_NAMESPACE)
    client = serve_api.serve_start(http_options=schema.http_options.model_dump(), proxy_location=schema.proxy_location,
                                   global_logging_config=schema.logging_config)
    client.deploy_apps(schema, _blocking=False)


def wait_until_healthy(port: int, *, timeout_s: float, faulty: frozenset[str] = frozenset()) -> None:
    """Poll /health until the app is up, then send warm-up turns until one runs every stage inside its budget.

    Stages in `faulty` (slowed on purpose by fault injection) may degrade.
    """
    from ray import serve

    deadline = time.time() + timeout_s
    while time.time() < deadline:
        status = serve.status().applications.get(APP_NAME)
        if status is not None and status.status == "DEPLOY_FAILED":
            raise RuntimeError(f"Deploy failed: {status.message}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as resp:
                if resp.status == 200 and b'"ok"' in resp.read() and _warm_turn(port, faulty):
                    return
        except OSError:
            pass
        time.sleep(1.0)
    raise TimeoutError(f"Baton did not become healthy on :{port} within {timeout_s:.0f} s")


def _warm_turn(port: int, faulty: frozenset[str]) -> bool:
    """One chat turn; True when no stage degraded (first calls through fresh handles and replicas are slow)."""
    body = json.dumps({"user_id": WARMUP_USER, "session_id": WARMUP_USER, "text": WARMUP_TEXT}).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/api/v1/agent/chat", data=body,
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=10) as resp:
        return resp.status == 200 and set(json.loads(resp.read())["timings"]["degraded"]) <= faulty


def ensure_database(config: dict[str, Any]) -> EmbeddedPostgres | None:
    """Without DATABASE_URL, start (or adopt) the embedded PostgreSQL under the state dir and point the replicas at it.

    Returns the server to stop on exit, or None when an external database is configured.
    """
    env_vars = [app["runtime_env"]["env_vars"] for app in config["applications"]]
    if all(v.get("DATABASE_URL") for v in env_vars):
        return None
    database = EmbeddedPostgres(Path(config["applications"][0]["args"]["state_dir"]) / "pgdata")
    dsn = database.start()
    for v in env_vars:
        v.setdefault("DATABASE_URL", dsn)
    return database


def stop() -> None:
    import ray
    from ray import serve

    if ray.is_initialized():
        try:
            serve.shutdown()
        finally:
            ray.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m serve_app.launcher", description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=Path("config/serve_local.yaml"))
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the app to become healthy")
    args = parser.parse_args(argv)

    config = load_serve_config(args.config, os.environ, port=args.port)
    port = config["http_options"]["port"]
    database = ensure_database(config)
    if database is not None:
        print(f"embedded PostgreSQL running from {database.pgdata}", flush=True)

    def on_signal(signum, frame):
        raise KeyboardInterrupt

    try:
        start(config)
        # after ray.init, which installs its own SIGTERM handler: ours shuts Serve and Ray down cleanly
        signal.signal(signal.SIGTERM, on_signal)
        faulty = frozenset(FaultSet.parse(os.environ.get("BATON_FAULTS", "")).faults)
        wait_until_healthy(port, timeout_s=args.timeout, faulty=faulty)
        print(f"Baton is serving on http://127.0.0.1:{port} (Ctrl-C or SIGTERM stops it)", flush=True)
        parent = os.getppid()
        while os.getppid() == parent:  # a parent that died (e.g. `make` got SIGTERM) takes us down too
            time.sleep(1.0)
    except KeyboardInterrupt:
        print("stopping Baton…", flush=True)
    finally:
        stop()
        if database is not None:
            database.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
