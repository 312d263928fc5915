"""What a Baton RayService pod may do and who may reach it (KubeRay v1.7.0, Ray 2.60): Ray's token authentication on
every Ray container, a restrictive security context, and the NetworkPolicies beside the RayService.

Ray's control plane (GCS, raylets, the dashboard's job and Serve APIs) runs whatever code it is handed, so:
- `RAY_AUTH_MODE=token` with `RAY_AUTH_TOKEN` from a Secret of its own on every Ray container, and the same Secret in
  `authOptions` so that the operator's own dashboard calls (it deploys `serveConfigV2` through the dashboard) carry
  the token (KubeRay reads `authOptions.secretName`, key `auth_token`);
- the dashboard is reached, outside Ray's own pods, by the KubeRay operator alone: it must listen where the
  operator reaches it (the head's Service: a dashboard on 127.0.0.1 leaves a RayService never deployed), so a
  NetworkPolicy admits its port from the operator's pods only (and the head's Serve port, which the operator
  health-checks), and the token guards every call;
- the Serve port is open to the ingress controller only; Ray's ports (GCS, raylets, object managers, workers, the
  direct-ingress replicas behind HAProxy) between Ray pods only; the metrics port to the cluster's Prometheus only.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

RAY_TOKEN_KEY = "auth_token"  # the key KubeRay's authOptions.secretName Secret must hold
CLUSTER_LABEL = "baton.dev/ray-cluster"  # on every Ray pod of the RayService: the NetworkPolicies select by it
GROUP_LABEL = "baton.dev/group"  # `head` or the worker group's name
HEAD_GROUP = "head"
DASHBOARD_PORT = 8265
# what still writes under a read-only root: Ray's session folder and Serve's HAProxy files (/tmp), torch, Hugging
# Face and vLLM caches (~/.cache), Triton's kernels (~/.triton)
WRITABLE = {"tmp": "/tmp", "cache": "/home/ray/.cache", "triton": "/home/ray/.triton"}


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Peer(_Spec):
    namespace: str = Field(description="The namespace the peer's pods run in (label kubernetes.io/metadata.name).")
    pod_labels: dict[str, str] = Field(default_factory=dict, description="Labels the peer's pods carry.")

    def selector(self) -> dict[str, Any]:
        peer: dict[str, Any] = {"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": self.namespace}}}
        if self.pod_labels:
            peer["podSelector"] = {"matchLabels": dict(self.pod_labels)}
        return peer


class NetworkSpec(_Spec):
    ingress: Peer = Field(description="The ingress controller: the only peer that reaches the Serve port.")
    operator: Peer = Field(description="The KubeRay operator: the only peer that reaches the head's dashboard.")
    metrics: Peer | None = Field(default=None, description="Prometheus: the only peer that reaches the metrics port.")


class PodUser(_Spec):
    run_as_user: int = Field(default=1000, ge=1, description="rayproject/ray's `ray` user; never root.")
    run_as_group: int = Field(default=100, ge=0)
    read_only_root: bool = Field(
        default=True, description="Root filesystem read-only; /tmp and ~/.cache are emptyDir volumes."
    )


def ray_auth_env(secret: str) -> list[dict[str, Any]]:
    """Ray's token authentication for a Ray container (set here so the manifest shows it; KubeRay injects nothing
    where the variables already are)."""
    return [
        {"name": "RAY_AUTH_MODE", "value": "token"},
        {"name": "RAY_AUTH_TOKEN", "valueFrom": {"secretKeyRef": {"name": secret, "key": RAY_TOKEN_KEY}}},
    ]


def pod_security(user: PodUser) -> dict[str, Any]:
    return {
        "runAsNonRoot": True,
        "runAsUser": user.run_as_user,
        "runAsGroup": user.run_as_group,
        "fsGroup": user.run_as_group,
        "seccompProfile": {"type": "RuntimeDefault"},
    }


def container_security(user: PodUser) -> dict[str, Any]:
    """Also what KubeRay gives the worker's init container (it copies the Ray container's) and the autoscaler."""
    return {
        "allowPrivilegeEscalation": False,
        "privileged": False,
        "readOnlyRootFilesystem": user.read_only_root,
        "capabilities": {"drop": ["ALL"]},
    }


def _mounts(user: PodUser) -> list[dict[str, Any]]:
    """The writable folders a read-only root filesystem still needs (emptyDir volumes of the pod)."""
    return [{"name": name, "mountPath": path} for name, path in WRITABLE.items()] if user.read_only_root else []


def pod_template(cluster: str, group: str, user: PodUser, container: dict[str, Any]) -> dict[str, Any]:
    """A Ray pod's template: labelled for the NetworkPolicies, its container hardened."""
    mounts = _mounts(user)
    container = {
        **container,
        "securityContext": container_security(user),
        **({"volumeMounts": mounts} if mounts else {}),
    }
    spec: dict[str, Any] = {"securityContext": pod_security(user), "containers": [container]}
    if mounts:
        spec["volumes"] = [{"name": m["name"], "emptyDir": {}} for m in mounts]
    return {"metadata": {"labels": {CLUSTER_LABEL: cluster, GROUP_LABEL: group}}, "spec": spec}


def autoscaler_options(user: PodUser) -> dict[str, Any]:
    """The autoscaler KubeRay adds to the head pod, as hardened as the Ray container beside it."""
    mounts = _mounts(user)
    return {"securityContext": container_security(user), **({"volumeMounts": mounts} if mounts else {})}


def network_policies(
    name: str, namespace: str, network: NetworkSpec, *, serve_port: int, metrics: tuple[int, list[str]] | None
) -> list[dict[str, Any]]:
    """The NetworkPolicies of a RayService's pods. Policies add up: a pod is reachable on what one of them admits,
    and on nothing else once any selects it. `metrics`: (port, the groups that serve it)."""
    ray_pods = {CLUSTER_LABEL: name}

    def policy(suffix: str, pods: dict[str, Any], rule: dict[str, Any]) -> dict[str, Any]:
        return {
            "apiVersion": "networking.k8s.io/v1",
            "kind": "NetworkPolicy",
            "metadata": {
                "name": f"{name}-{suffix}",
                "namespace": namespace,
                "labels": {"app.kubernetes.io/name": name},
            },
            "spec": {"podSelector": pods, "policyTypes": ["Ingress"], "ingress": [rule]},
        }

    def tcp(port: int) -> list[dict[str, Any]]:
        return [{"protocol": "TCP", "port": port}]

    out = [
        # GCS, raylets, object managers, workers, agents and HAProxy's replicas: Ray picks most of these ports itself
        policy("ray-internal", {"matchLabels": ray_pods}, {"from": [{"podSelector": {"matchLabels": ray_pods}}]}),
        policy(
            "serve-ingress",
            {"matchLabels": ray_pods},
            {"from": [network.ingress.selector()], "ports": tcp(serve_port)},
        ),
        # the operator deploys serveConfigV2 through the dashboard and health-checks the head's Serve proxy
        policy(
            "head-operator",
            {"matchLabels": {**ray_pods, GROUP_LABEL: HEAD_GROUP}},
            {"from": [network.operator.selector()], "ports": [*tcp(DASHBOARD_PORT), *tcp(serve_port)]},
        ),
    ]
    if metrics and network.metrics:
        port, groups = metrics
        pods = {
            "matchLabels": ray_pods,
            "matchExpressions": [{"key": GROUP_LABEL, "operator": "In", "values": sorted(groups)}],
        }
        out.append(policy("metrics", pods, {"from": [network.metrics.selector()], "ports": tcp(port)}))
    return out
