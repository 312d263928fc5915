"""`python -m serve_app.ops.launcher`: start Ray and Serve on loopback, deploy a Serve config, stay up until signalled.

The config is the standard Serve YAML; the launcher pins paths to absolute ones (replicas do not share the
driver's working directory), applies `BATON_PACK` / `BATON_STATE_DIR` to the app args (`BATON_APPS=all`, or a list of
packs: one application per pack, serve_app.ops.apps), builds each app with
its `import_path` builder and deploys it with Serve's public API (`serve.start`, `serve.run_many`), the
YAML's per-deployment options applied by the builder. Replicas inherit their environment from this process
(the app's `runtime_env.env_vars`, `BATON_FAULTS`, `BATON_METRICS_PORT`, `DATABASE_URL`, `BATON_AUTH_SECRET`),
so no secret is written into a Serve config. Without `DATABASE_URL` it starts an embedded PostgreSQL under
the state dir. It prints its "serving" line once every app's `/health` is green (every stage answered warm), and a stop
signal (SIGINT, SIGTERM, SIGHUP — also when the whole process group gets it) stops Ray and PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from config.environment import METRICS_DIR_ENV
from deployments.faults import FaultSet
from serve_app.ops.apps import APP_NAME, cpu_demand, packs_of, per_pack, route_prefixes
from serve_app.ops.health import wait_until_healthy
from serve_app.ops.node_env import faults_file, haproxy_dir, replica_environment, selected_labels, stop_haproxy
from serve_app.ops.ports import (  # noqa: F401 — free_ports re-exported for tests and benchmarks
    HAPROXY_PORT_RANGE,
    REPLICA_GRPC_PORT_RANGE,
    REPLICA_PORTS,
    free_block,
    free_ports,
    free_ports_in,
)
from store.embedded import EmbeddedPostgres

CODE_ROOT = Path(__file__).resolve().parents[2]  # the checkout whose serve_app this is
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def load_serve_config(path: Path, env: Mapping[str, str], *, port: int | None = None) -> dict[str, Any]:
    """The Serve config with absolute paths, the env-selected pack (or packs: `BATON_APPS`) and state dir, and an
    optional port."""
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
        for deployment in app.get("deployments", []):
            _pin_interpreter(deployment, CODE_ROOT)
    if env.get("BATON_APPS"):
        config_dir = Path(config["applications"][0]["args"]["config_dir"])
        config = per_pack(config, packs_of(env["BATON_APPS"], config_dir))
    return config


def _pin_interpreter(deployment: dict[str, Any], root: Path) -> None:
    """A deployment that runs in a venv of its own (runtime_env py_executable, e.g. the Planner in .venv-llm): the
    interpreter's path made absolute against Baton's checkout `root` (wherever the Serve config was written, e.g. a
    benchmark's copy), and Baton's own packages put on its path (that venv does not install them)."""
    runtime_env = deployment.get("ray_actor_options", {}).get("runtime_env", {})
    if not runtime_env.get("py_executable"):
        return
    executable = Path(runtime_env["py_executable"])
    runtime_env["py_executable"] = str(executable if executable.is_absolute() else (root / executable).absolute())
    runtime_env.setdefault("env_vars", {}).setdefault("PYTHONPATH", str(root))


def set_faults(config: dict[str, Any], spec: str) -> None:
    """Inject faults into the running app, e.g. "encoder:delay_ms=800" ("" clears them); no restart."""
    FaultSet.parse(spec)  # refuse a bad spec here rather than in every replica
    path = faults_file(config)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(spec, encoding="utf-8")
    os.replace(tmp, path)


def build_applications(config: dict[str, Any]) -> list[Any]:  # serve.RunTarget
    from ray import serve

    targets = []
    for app in config["applications"]:
        module, _, attr = app["import_path"].partition(":")
        builder = getattr(importlib.import_module(module), attr)
        options = {d["name"]: {k: v for k, v in d.items() if k != "name"} for d in app.get("deployments", [])}
        application = builder({**app["args"], "deployment_options": options})
        targets.append(
            serve.RunTarget(
                target=application, name=app.get("name", APP_NAME), route_prefix=app.get("route_prefix", "/")
            )
        )
    return targets


def logical_cpus(config: dict[str, Any]) -> int | None:
    """Ray's logical CPUs on this machine: its cores (None: Ray counts them) for one app; with one app per pack, the
    cores plus what the later apps' own deployments hold at their most replicas, so each pack's app has the room the
    first one has alone (fractional shares pack replicas onto the cores; a replica Ray cannot place would wait)."""
    extra = cpu_demand({"applications": config["applications"][1:]})
    return (os.cpu_count() or 1) + math.ceil(extra - 1e-9) if extra else None


def start(config: dict[str, Any], env: Mapping[str, str] | None = None, *, num_cpus: int | None = None) -> str | None:
    """Start Ray (no dashboard) and Serve if needed, and deploy the config's apps; returns once submitted, with
    the folder of the Ray session it started (None when Ray was already running).

    A later call redeploys (same process; the replicas restart): only the config changes take effect, not
    `env`. Faults flip without a redeploy: `set_faults`."""
    import ray
    from ray import serve

    if not ray.is_initialized():
        variables = replica_environment(config, env if env is not None else os.environ)
        metrics_dir = Path(variables[METRICS_DIR_ENV])
        shutil.rmtree(metrics_dir, ignore_errors=True)  # a previous run's samples would be summed into this one's
        metrics_dir.mkdir(parents=True, exist_ok=True)
        set_faults(config, "")
        os.environ.update(variables)
        # address="local": always a Ray of our own, never one a `ray start` left registered on this machine
        # one machine plays every role: it carries every node label the deployments select
        # the node on loopback: one machine's Ray (and the replicas' gRPC and HTTP servers) never reaches for an
        # outside interface
        context: Any = ray.init(
            address="local",
            num_cpus=num_cpus if num_cpus is not None else logical_cpus(config),
            labels=selected_labels(config),
            include_dashboard=False,
            log_to_driver=False,
            _node_ip_address="127.0.0.1",
        )  # a RayContext
        session = context.address_info["session_dir"]
        serve.start(
            http_options=config.get("http_options"),
            proxy_location=config.get("proxy_location"),
            logging_config=config.get("logging_config"),
        )
    else:
        session = None
    serve.run_many(
        build_applications(config), wait_for_ingress_deployment_creation=False, wait_for_applications_running=False
    )
    return session


def ensure_database(
    config: dict[str, Any], env: dict[str, str], *, pgdata: Path | None = None
) -> EmbeddedPostgres | None:
    """Without DATABASE_URL in `env`, start (or adopt) the embedded PostgreSQL (`pgdata`, default under the state
    dir) and put its DSN in `env`. Returns the server, or None when an external database is configured."""
    if env.get("DATABASE_URL"):
        return None
    database = EmbeddedPostgres(pgdata or Path(config["applications"][0]["args"]["state_dir"]) / "pgdata")
    env["DATABASE_URL"] = database.start()
    return database


SERVE_SHUTDOWN_S = 4.0  # in-flight turns get this long to finish; the whole stop must stay under 15 s


def run_dir(config: dict[str, Any]) -> Path:
    port = config.get("http_options", {}).get("port", 8000)
    path = Path(config["applications"][0]["args"]["state_dir"]) / "run" / str(port)
    path.mkdir(parents=True, exist_ok=True)
    return path


def start_reaper(port: int, session_file: Path, database: EmbeddedPostgres | None) -> subprocess.Popen:
    """The process that stops this run's leftovers once this one is gone (serve_app.ops.reaper), in its own session
    so the stop signal of our process group does not reach it."""
    cmd = [
        sys.executable,
        "-m",
        "serve_app.ops.reaper",
        "--launcher",
        str(os.getpid()),
        "--marker",
        str(haproxy_dir(port)),
        "--remove",
        str(haproxy_dir(port)),
        "--session-file",
        str(session_file),
    ]
    if database is not None and database.owned:
        cmd += ["--pgdata", str(database.pgdata)]
    return subprocess.Popen(
        cmd,
        start_new_session=True,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=CODE_ROOT,
    )


def stop(port: int | None = None) -> None:
    """Shut Serve (which stops its HAProxy) and Ray down. When a stop signal reached the whole process group the
    Serve controller may already be gone: Serve gets `SERVE_SHUTDOWN_S`, then Ray stops every process it
    started, and an HAProxy of this run that outlived its manager is stopped by its PID."""
    import ray

    if ray.is_initialized():
        _shutdown_serve(SERVE_SHUTDOWN_S)
        ray.shutdown()
    if port is not None:
        stop_haproxy(port)


def _shutdown_serve(timeout_s: float) -> None:
    """Serve's shutdown, given up after `timeout_s`, on an event loop of this thread. Not in a helper thread: one
    abandoned there touches Ray after `ray.shutdown()`, and Ray ends a process that does that."""
    from ray import serve
    from ray.exceptions import RayError

    async def bounded() -> None:
        try:
            await asyncio.wait_for(serve.shutdown_async(), timeout_s)
        except (TimeoutError, RayError):
            pass  # the controller is slow or already gone: ray.shutdown() stops what it left

    asyncio.run(bounded())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m serve_app.ops.launcher", description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=Path("config/serve_local.yaml"))
    parser.add_argument("--port", type=int, default=None)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the app to become healthy")
    parser.add_argument("--pgdata", type=Path, default=None, help="embedded PostgreSQL folder (<state dir>/pgdata)")
    args = parser.parse_args(argv)

    env = dict(os.environ)
    config = load_serve_config(args.config, env, port=args.port)
    port = config["http_options"]["port"]

    def on_signal(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    for sig in STOP_SIGNALS:
        signal.signal(sig, on_signal)
    database = None
    session_file = run_dir(config) / "ray-session"
    try:
        database = ensure_database(config, env, pgdata=args.pgdata)
        if database is not None:
            print(f"embedded PostgreSQL running from {database.pgdata}", flush=True)
        start_reaper(port, session_file, database)
        session_file.write_text(start(config, env) or "", encoding="utf-8")
        for sig in STOP_SIGNALS:  # ray.init installs its own SIGTERM handler: ours stops everything cleanly
            signal.signal(sig, on_signal)
        apps = route_prefixes(config)
        degraded = wait_until_healthy(port, timeout_s=args.timeout, apps=apps)
        where = " and ".join(f"http://127.0.0.1:{port}{prefix.rstrip('/')}" for prefix in apps.values())
        print(f"Baton is serving on {where} (Ctrl-C or SIGTERM stops it) {degraded}", flush=True)
        parent = os.getppid()
        while os.getppid() == parent:  # a parent that died (e.g. `make` got SIGTERM) takes us down too
            time.sleep(0.5)
    except KeyboardInterrupt:
        print("stopping Baton…", flush=True)
    except TimeoutError as exc:  # a stage that never answered its warm-up: its name, and a failing exit status
        print(f"Baton did not start: {exc}", file=sys.stderr, flush=True)
        return 1
    finally:
        for sig in STOP_SIGNALS:
            signal.signal(sig, signal.SIG_IGN)  # a second signal must not cut the clean-up short
        stop(port)
        if database is not None:
            database.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
