"""What every Ray node running Baton needs in its processes' environment and labels, on one machine (the launcher)
and on a cluster (the pods KubeRay starts): Serve reads these switches when its controller and proxies start, before
any Serve config is applied, so they cannot travel in a config's `runtime_env`. No secret is here: replicas read
DATABASE_URL and the signing secret from their own environment (the launcher's, or a pod's from a Kubernetes Secret)."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from config.environment import FAULTS_ENV, FAULTS_FILE_ENV, METRICS_DIR_ENV, METRICS_PORT_ENV
from config.settings import Settings
from serve_app.args import AppArgs
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


def haproxy_dir(port: int) -> Path:
    """Short on purpose: HAProxy refuses socket paths over 97 characters, and Ray adds a 40-character folder."""
    return Path(tempfile.gettempdir()) / f"baton-haproxy-{port}"


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
    switches = serve_switches(AppArgs.model_validate(app["args"]).settings())
    out.update(switches)
    if "RAY_SERVE_ENABLE_HA_PROXY" in switches:
        out.update(
            {
                # a path of this run's own, so its HAProxy is known by it after Ray is gone
                "RAY_SERVE_HAPROXY_CONFIG_FILE_LOC": str(haproxy_dir(port) / "haproxy.cfg"),
                "RAY_SERVE_HAPROXY_SOCKET_PATH": str(haproxy_dir(port) / "admin.sock"),
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
