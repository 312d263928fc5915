"""What every Ray node running Baton needs in its processes' environment and labels, on one machine (the launcher)
and on a cluster (the pods KubeRay starts): Serve reads these switches when its controller and proxies start, before
any Serve config is applied, so they cannot travel in a config's `runtime_env`. No secret is here: replicas read
DATABASE_URL and the signing secret from their own environment (the launcher's, or a pod's from a Kubernetes Secret)."""
from __future__ import annotations

from typing import Any

from engine.settings import Settings
from serve_app.proxy_envelope import CALLBACK as PROXY_CALLBACK

# Read by replicas from their own environment, never written into a Serve config or a rendered manifest.
SECRET_ENV = ("DATABASE_URL", "BATON_AUTH_SECRET")


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
    return {key: value for app in config["applications"] for deployment in app.get("deployments", [])
            for key, value in (deployment.get("ray_actor_options") or {}).get("label_selector", {}).items()}
