"""The KubeRay RayService for a Serve config (KubeRay v1.7.0, `ray.io/v1`).

One source: the Serve config (deployments, GPU shares, accelerator types, node labels, autoscaling, the settings
overrides) is embedded as `serveConfigV2`; the cluster it runs on (image, Secrets, the head and each worker group's
pods and labels, who may reach them) comes from a small cluster spec (deploy/kuberay/cluster.yaml). Every pod gets
Ray Serve's switches (serve_app/node_env.py), Ray's token authentication and a restrictive security context
(serve_app/ops/kuberay_posture.py); Baton's secrets go to the worker groups that run the Orchestrator only, as
references to a Kubernetes Secret, never their values: this module reads no environment. Rendering refuses a
deployment that no worker group can place (its labels, its GPU share, its accelerator type) and one that could land
in a group holding the secrets."""

from __future__ import annotations

import copy
from pathlib import PurePosixPath
from typing import Any

import yaml

from config.settings import Settings
from serve_app.args import INGRESS, AppArgs
from serve_app.ops.cluster_spec import ClusterSpec, PodSize, WorkerGroup
from serve_app.ops.kuberay_posture import (
    DASHBOARD_PORT,
    HEAD_GROUP,
    autoscaler_options,
    network_policies,
    pod_template,
    ray_auth_env,
)
from serve_app.ops.node_env import serve_switches

KUBERAY_VERSION = "v1.7.0"
API_VERSION = "ray.io/v1"
GPU_RESOURCE = "nvidia.com/gpu"
GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"  # set on GPU nodes by NVIDIA's GPU feature discovery
# no Ray Client port: nothing here uses it; the dashboard's is the operator's way in (kuberay_posture.py)
HEAD_PORTS = {"gcs-server": 6379, "dashboard": DASHBOARD_PORT}
SERVE_PORT_NAME = "serve"


def render(serve_config: dict[str, Any], cluster: ClusterSpec, *, header: str = "") -> str:
    """The RayService manifest as YAML text. `serve_config` has the launcher's absolute local paths (its settings
    are read from them); the embedded copy points at the image's `app_root` instead."""
    settings, placements = _placements(serve_config, cluster)
    _check_secret_keys(serve_config, cluster)
    secret_groups = _secret_groups(placements)
    switches = [{"name": k, "value": v} for k, v in serve_switches(settings).items()]
    env = [*switches, *ray_auth_env(cluster.ray_token_secret)]
    secrets = [
        {"name": var, "valueFrom": {"secretKeyRef": {"name": cluster.secret.name, "key": key}}}
        for var, key in cluster.secret.keys.items()
    ]
    serve_port = {"containerPort": _serve_port(serve_config), "name": SERVE_PORT_NAME}
    metrics_port = (
        {"containerPort": settings.serving.metrics_port, "name": "metrics"} if settings.serving.metrics_port else None
    )
    user = cluster.pod_user

    head_ports = [*({"containerPort": p, "name": n} for n, p in HEAD_PORTS.items()), serve_port]
    head = {
        # no replica on the head (it holds GCS); the dashboard listens where the operator reaches it, and only the
        # operator may (the NetworkPolicy), with Ray's token (authOptions)
        "rayStartParams": {"num-cpus": "0", "dashboard-host": "0.0.0.0"},
        "template": pod_template(
            cluster.name, HEAD_GROUP, user, _container("ray-head", cluster, cluster.head, env, head_ports)
        ),
    }
    workers = []
    for group in cluster.workers:
        holds_secrets = group.name in secret_groups
        ports = [serve_port, *([metrics_port] if metrics_port and holds_secrets else [])]
        container = _container("ray-worker", cluster, group.size, [*env, *(secrets if holds_secrets else [])], ports)
        template = pod_template(cluster.name, group.name, user, container)
        spec: dict[str, Any] = template["spec"]
        if group.size.gpus:
            spec["tolerations"] = [{"key": GPU_RESOURCE, "operator": "Exists", "effect": "NoSchedule"}]
        if group.gpu_product:
            spec["nodeSelector"] = {GPU_PRODUCT_LABEL: group.gpu_product}
        if group.service_account:
            spec["serviceAccountName"] = group.service_account
        spec["automountServiceAccountToken"] = False  # no Kubernetes API here; workload identity mounts its own token
        workers.append(
            {
                "groupName": group.name,
                "replicas": group.replicas,
                "minReplicas": group.min_replicas,
                "maxReplicas": group.max_replicas,
                **({"labels": dict(group.labels)} if group.labels else {}),
                "rayStartParams": {},
                "template": template,
            }
        )
    cluster_config: dict[str, Any] = {
        "rayVersion": cluster.ray_version,
        "authOptions": {"mode": "token", "secretName": cluster.ray_token_secret},
        "enableInTreeAutoscaling": cluster.autoscaling,
    }
    if cluster.autoscaling:
        cluster_config["autoscalerOptions"] = autoscaler_options(user)
    manifest = {
        "apiVersion": API_VERSION,
        "kind": "RayService",
        "metadata": {
            "name": cluster.name,
            "namespace": cluster.namespace,
            "labels": {"app.kubernetes.io/name": cluster.name},
        },
        "spec": {
            "serveConfigV2": _literal(
                yaml.safe_dump(in_image(serve_config, cluster.app_root), sort_keys=False, allow_unicode=True, width=120)
            ),
            "rayClusterConfig": {**cluster_config, "headGroupSpec": head, "workerGroupSpecs": workers},
        },
    }
    return header + yaml.dump(manifest, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)


def render_network(serve_config: dict[str, Any], cluster: ClusterSpec, *, header: str = "") -> str:
    """The NetworkPolicies of the RayService's pods (kubectl applies them beside it), as YAML documents."""
    settings, placements = _placements(serve_config, cluster)
    metrics = settings.serving.metrics_port
    policies = network_policies(
        cluster.name,
        cluster.namespace,
        cluster.network,
        serve_port=_serve_port(serve_config),
        metrics=(metrics, sorted(_secret_groups(placements))) if metrics else None,
    )
    return header + yaml.dump_all(policies, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=120)


def _check_secret_keys(serve_config: dict[str, Any], cluster: ClusterSpec) -> None:
    """Every variable an app's settings name as a secret (`calendar.key_env`, each LLM backend's `api_key_env`) is
    mapped from the Secret: otherwise the pods start without it and the feature fails only when first used."""
    for app in serve_config["applications"]:
        settings = AppArgs.model_validate(app["args"]).settings(environ={})
        needed = {settings.calendar.key_env, *settings.llm.key_envs().values()}
        missing = sorted(needed - cluster.secret.keys.keys())
        if missing:
            raise ValueError(
                f"secret.keys must map {', '.join(missing)}: application {app.get('name', '?')!r} reads them from its "
                "environment (calendar.key_env, llm.backends.<name>.api_key_env)"
            )


def _placements(serve_config: dict[str, Any], cluster: ClusterSpec) -> tuple[Settings, dict[str, set[str]]]:
    apps = serve_config["applications"]
    settings = AppArgs.model_validate(apps[0]["args"]).settings(environ={})
    placements = {d["name"]: _place(d, cluster.workers) for app in apps for d in app.get("deployments", [])}
    return settings, placements


def _secret_groups(placements: dict[str, set[str]]) -> set[str]:
    """The groups the Orchestrator can run in: they alone get Baton's secrets, so nothing else may run there (the
    models parse untrusted audio, images and prompts)."""
    groups = placements.get(INGRESS, set())
    for name, fits in placements.items():
        shared = fits & groups if name != INGRESS else set()
        if shared:
            raise ValueError(
                f"{name} could run in worker group {', '.join(sorted(shared))}, which holds the secrets the "
                f"{INGRESS} needs: give {name} a label_selector that group does not carry"
            )
    return groups


def pool_demand(serve_config: dict[str, Any]) -> tuple[int, int, int]:
    """(database.pool_max, every app's Orchestrators' most replicas, database.connection_margin): the PostgreSQL server
    needs max_connections of at least their product plus the margin and its reserved connections (checked at start)."""
    database = AppArgs.model_validate(serve_config["applications"][0]["args"]).settings(environ={}).database
    ingresses = [d for app in serve_config["applications"] for d in app.get("deployments", []) if d["name"] == INGRESS]
    replicas = sum(
        int((d.get("autoscaling_config") or {}).get("max_replicas") or d.get("num_replicas", 1)) for d in ingresses
    )
    return database.pool_max, replicas, database.connection_margin


def _serve_port(serve_config: dict[str, Any]) -> int:
    return int(serve_config.get("http_options", {}).get("port", 8000))


def in_image(serve_config: dict[str, Any], app_root: str) -> dict[str, Any]:
    """The Serve config with its apps' folders inside the image (the launcher made them absolute on this machine)."""
    out = copy.deepcopy(serve_config)
    root = PurePosixPath(app_root)
    for app in out["applications"]:
        args = app.setdefault("args", {})
        args["config_dir"] = str(root / "config")
        args["state_dir"] = str(root / "var")
    return out


def _place(deployment: dict[str, Any], groups: list[WorkerGroup]) -> set[str]:
    """The worker groups that can run a replica of `deployment`; none is an error that says what it asked for."""
    options = deployment.get("ray_actor_options") or {}
    wanted = options.get("label_selector", {})
    share, accelerator = float(options.get("num_gpus", 0)), options.get("accelerator_type")
    fits = {
        g.name
        for g in groups
        if wanted.items() <= g.labels.items()
        and share <= g.size.gpus
        and (not accelerator or accelerator == g.accelerator_type)
    }
    if not fits:
        raise ValueError(
            f"no worker group can place {deployment['name']}: it selects labels {wanted}, "
            f"num_gpus {share:g}, accelerator_type {accelerator or 'any'}"
        )
    return fits


def _container(name: str, cluster: ClusterSpec, size: PodSize, env: list[dict], ports: list[dict]) -> dict[str, Any]:
    amounts = {"cpu": size.cpu, "memory": size.memory, **({GPU_RESOURCE: size.gpus} if size.gpus else {})}
    return {
        "name": name,
        "image": cluster.image,
        "env": env,
        "ports": ports,
        "resources": {"limits": dict(amounts), "requests": dict(amounts)},
    }


class _literal(str):
    """A multi-line string written as a YAML literal block (the embedded Serve config stays readable)."""


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True  # each pod spelled out in full, no anchors: easier to read and to diff


_Dumper.add_representer(
    _literal, lambda dumper, text: dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|")
)
