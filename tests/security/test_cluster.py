"""The cluster's posture (multi-node and KubeRay): Ray's control plane demands its token on every pod and is
reachable from Ray's own pods only (the dashboard from the KubeRay operator alone), the Serve port from the ingress
only, every pod unprivileged, Baton's secrets in the Orchestrator's worker group alone, and the Orchestrators' pools
never larger than the PostgreSQL server can hold (checked at start against `max_connections`)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from config.settings import load_settings
from serve_app.ops.cluster_spec import ClusterSpec
from serve_app.ops.deploy import CLUSTER, NETWORK, OUT, main, network_policies
from serve_app.ops.kuberay import render
from serve_app.ops.launcher import load_serve_config
from serve_app.ops.node_env import SECRET_ENV
from store.capacity import PoolTooLarge, ensure_pool_fits, server_capacity
from tests.support.packs import CONFIG_DIR

ROOT = Path(__file__).resolve().parents[2]
GPU = ROOT / "config" / "serve_gpu.yaml"
POLICIES = OUT.parent / NETWORK
RAY_PEER, INGRESS, OPERATOR, PROMETHEUS = "ray pods", "ingress-nginx", "kuberay-system", "monitoring"


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    return yaml.safe_load(OUT.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def policies() -> list[dict[str, Any]]:
    return [p for p in yaml.safe_load_all(POLICIES.read_text(encoding="utf-8")) if p]


def pods(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Group name ('head' for the head) -> its pod template."""
    cluster = manifest["spec"]["rayClusterConfig"]
    return {
        "head": cluster["headGroupSpec"]["template"],
        **{g["groupName"]: g["template"] for g in cluster["workerGroupSpecs"]},
    }


def serve_config(manifest: dict[str, Any]) -> dict[str, Any]:
    return yaml.safe_load(manifest["spec"]["serveConfigV2"])


def spec() -> ClusterSpec:
    return ClusterSpec.model_validate(yaml.safe_load(CLUSTER.read_text(encoding="utf-8")))


def selects(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A Kubernetes label selector (matchLabels, matchExpressions In) against a pod's labels."""
    if not selector.get("matchLabels", {}).items() <= labels.items():
        return False
    return all(
        e["operator"] == "In" and labels.get(e["key"]) in e["values"] for e in selector.get("matchExpressions", [])
    )


def peer_name(peer: dict[str, Any], ray_labels: dict[str, str]) -> str:
    if "namespaceSelector" not in peer:
        return RAY_PEER if selects(peer["podSelector"], ray_labels) else f"pods {peer['podSelector']}"
    return peer["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"]


def admitted(policies: list[dict[str, Any]], labels: dict[str, str], port: int) -> set[str] | None:
    """Who may open `port` on a pod with `labels`; None when no policy selects the pod (everyone may)."""
    chosen = [p for p in policies if selects(p["spec"]["podSelector"], labels)]
    if not chosen:
        return None
    return {
        peer_name(peer, labels)
        for p in chosen
        for rule in p["spec"]["ingress"]
        if "ports" not in rule or any(r["port"] == port for r in rule["ports"])
        for peer in rule["from"]
    }


# 1. Ray's control plane


def test_the_committed_network_policies_are_what_the_sources_render_now():
    assert POLICIES.read_text(encoding="utf-8") == network_policies(GPU), "python -m serve_app.ops.deploy kuberay"


def test_ray_token_auth_is_on_for_every_ray_pod_and_for_the_operators_own_calls(manifest):
    cluster = manifest["spec"]["rayClusterConfig"]
    # KubeRay sends the token on its dashboard calls (the Serve deploys) only with authOptions naming the Secret
    assert cluster["authOptions"] == {"mode": "token", "secretName": "baton-ray-token"}
    for group, template in pods(manifest).items():
        env = {e["name"]: e for e in template["spec"]["containers"][0]["env"]}
        assert env.get("RAY_AUTH_MODE", {}).get("value") == "token", group
        ref = env["RAY_AUTH_TOKEN"]["valueFrom"]["secretKeyRef"]
        assert ref == {"name": "baton-ray-token", "key": "auth_token"} and "value" not in env["RAY_AUTH_TOKEN"], group


def test_the_multinode_nodes_start_with_token_auth(capsys):
    assert main(["env", "--config", str(ROOT / "config" / "serve_multinode.yaml")]) == 0
    assert "export RAY_AUTH_MODE=token" in capsys.readouterr().out.splitlines()


def test_ray_ports_are_open_between_ray_pods_only_and_serve_to_the_ingress(manifest, policies):
    for group, template in pods(manifest).items():
        labels = template["metadata"]["labels"]
        for port in (6379, 10001, 52365, 8080, 10002):  # GCS, Ray Client, agent, metrics export, a worker
            assert admitted(policies, labels, port) == {RAY_PEER}, (group, port)
        serve = {RAY_PEER, INGRESS, *([OPERATOR] if group == "head" else [])}  # the operator checks the head's proxy
        assert admitted(policies, labels, 8000) == serve, group
    cpu = pods(manifest)["cpu"]["metadata"]["labels"]
    assert admitted(policies, cpu, 9464) == {RAY_PEER, PROMETHEUS}
    assert admitted(policies, pods(manifest)["gpu"]["metadata"]["labels"], 9464) == {RAY_PEER}


def test_the_dashboard_is_reached_by_the_operator_alone(manifest, policies):
    """KubeRay deploys serveConfigV2 through the head's dashboard Service, so the dashboard cannot listen on 127.0.0.1
    alone: off the pod network it is, by a NetworkPolicy that admits the operator only, and it demands the token."""
    head = pods(manifest)["head"]
    assert admitted(policies, head["metadata"]["labels"], 8265) == {RAY_PEER, OPERATOR}
    ports = {p["name"]: p["containerPort"] for p in head["spec"]["containers"][0]["ports"]}
    assert "client" not in ports and 10001 not in ports.values()  # no Ray Client
    for group in ("cpu", "gpu", "llm"):
        assert admitted(policies, pods(manifest)[group]["metadata"]["labels"], 8265) == {RAY_PEER}


def test_every_pod_runs_unprivileged(manifest):
    cluster = manifest["spec"]["rayClusterConfig"]
    containers = [cluster["autoscalerOptions"]["securityContext"]]
    for group, template in pods(manifest).items():
        pod = template["spec"]["securityContext"]
        assert pod["runAsNonRoot"] is True and pod["runAsUser"] > 0, group
        assert pod["seccompProfile"] == {"type": "RuntimeDefault"}, group
        containers.append(template["spec"]["containers"][0]["securityContext"])
        mounts = {m["mountPath"] for m in template["spec"]["containers"][0]["volumeMounts"]}
        assert "/tmp" in mounts, group  # Ray's session folder on a read-only root
    for security in containers:
        assert security["allowPrivilegeEscalation"] is False and security["privileged"] is False
        assert security["capabilities"] == {"drop": ["ALL"]} and security["readOnlyRootFilesystem"] is True


# 2. Secrets in the Orchestrator's group alone


def test_no_secret_outside_the_orchestrators_group(manifest):
    orchestrator = next(
        d for d in serve_config(manifest)["applications"][0]["deployments"] if d["name"] == "Orchestrator"
    )
    wanted = orchestrator["ray_actor_options"]["label_selector"]
    groups = {g["groupName"]: g.get("labels", {}) for g in manifest["spec"]["rayClusterConfig"]["workerGroupSpecs"]}
    hosts = {name for name, labels in groups.items() if wanted.items() <= labels.items()}
    assert hosts == {"cpu"}
    for group, template in pods(manifest).items():
        env = template["spec"]["containers"][0]["env"]
        given = {
            e["name"] for e in env if e.get("valueFrom", {}).get("secretKeyRef", {}).get("name") == "baton-secrets"
        }
        assert given == ({*SECRET_ENV, "BATON_CALENDAR_KEY"} if group in hosts else set()), group
        assert not [e["name"] for e in env if e["name"].startswith("AWS_")], group  # workload identity instead
        assert template["spec"].get("automountServiceAccountToken", group == "head") is (group == "head"), group


def test_a_deployment_that_could_land_beside_the_secrets_is_refused():
    config = load_serve_config(GPU, {})
    ocr = next(d for d in config["applications"][0]["deployments"] if d["name"] == "OCR")
    ocr["ray_actor_options"]["label_selector"] = {}  # any group, the Orchestrator's too
    ocr["ray_actor_options"].pop("accelerator_type")
    ocr["ray_actor_options"]["num_gpus"] = 0
    with pytest.raises(ValueError, match="OCR could run in worker group cpu, which holds the secrets"):
        render(config, spec())


def test_static_cloud_keys_in_the_secret_are_refused():
    raw = copy.deepcopy(yaml.safe_load(CLUSTER.read_text(encoding="utf-8")))
    raw["secret"]["keys"]["AWS_SECRET_ACCESS_KEY"] = "s3-secret-access-key"
    with pytest.raises(ValidationError, match="workload identity"):
        ClusterSpec.model_validate(raw)


# 3. The Orchestrators' pools against the server's max_connections


@pytest.mark.store
async def test_the_start_check_refuses_pools_the_server_cannot_hold_and_accepts_one_it_can(postgres):
    config = load_settings(CONFIG_DIR, {}).database
    capacity = await server_capacity(postgres["dsn"], config)
    assert capacity.max_connections > capacity.usable > 0
    fits = capacity.usable // config.pool_max
    assert fits >= 1, "the test server holds at least one replica's pool"
    assert await ensure_pool_fits(postgres["dsn"], config, replicas=fits) == capacity
    with pytest.raises(PoolTooLarge) as refused:
        await ensure_pool_fits(postgres["dsn"], config, replicas=fits + 1)
    message = str(refused.value)
    for figure in (config.pool_max, fits + 1, config.pool_max * (fits + 1), capacity.max_connections, capacity.usable):
        assert str(figure) in message
    for setting in ("database.pool_max", "max_replicas", "max_connections"):
        assert setting in message


@pytest.mark.parametrize("name", ["serve_local.yaml", "serve_gpu.yaml", "serve_multinode.yaml"])
def test_every_shipped_serve_config_fits_a_stock_postgresql(name):
    """What the start check would say against a stock server (max_connections 100, 3 reserved): each shipped config's
    pool_max x the Orchestrator's max_replicas fits, so none of them refuses to start there."""
    from config.settings import merged
    from store.capacity import ServerCapacity, check_pool

    config = yaml.safe_load((CONFIG_DIR / name).read_text(encoding="utf-8"))
    app = config["applications"][0]
    database = load_settings(CONFIG_DIR, {}, merged(app["args"].get("overrides", {}), {})).database
    orchestrator = next(d for d in app["deployments"] if d["name"] == "Orchestrator")
    replicas = orchestrator.get("autoscaling_config", {}).get("max_replicas") or orchestrator.get("num_replicas", 1)
    check_pool(
        ServerCapacity(max_connections=100, reserved=3, margin=database.connection_margin),
        pool_max=database.pool_max,
        replicas=replicas,
    )
