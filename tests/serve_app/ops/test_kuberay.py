"""The KubeRay RayService rendered from config/serve_gpu.yaml: the committed manifest is what the sources render now,
it validates against the JSON schema of the fields Baton emits (KubeRay v1.7.0), its serveConfigV2 is a Serve config
Serve accepts, every deployment has a worker group to run on, and secrets are Kubernetes Secret references only."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from pydantic import ValidationError
from ray.serve.schema import ServeDeploySchema

from serve_app.ops.cluster_spec import ClusterSpec
from serve_app.ops.deploy import CLUSTER, OUT, main, rayservice
from serve_app.ops.kuberay import KUBERAY_VERSION, in_image, render
from serve_app.ops.launcher import load_serve_config
from serve_app.ops.node_env import SECRET_ENV

ROOT = Path(__file__).resolve().parents[3]
GPU = ROOT / "config" / "serve_gpu.yaml"
SCHEMA = json.loads((ROOT / "deploy" / "kuberay" / "rayservice.schema.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def manifest() -> dict:
    return yaml.safe_load(OUT.read_text(encoding="utf-8"))


def spec() -> ClusterSpec:
    return ClusterSpec.model_validate(yaml.safe_load(CLUSTER.read_text(encoding="utf-8")))


def containers(manifest: dict) -> list[dict]:
    cluster = manifest["spec"]["rayClusterConfig"]
    groups = [cluster["headGroupSpec"], *cluster["workerGroupSpecs"]]
    return [c for g in groups for c in g["template"]["spec"]["containers"]]


def test_the_committed_manifest_is_what_its_sources_render_now():
    assert OUT.read_text(encoding="utf-8") == rayservice(GPU), (
        "deploy/kuberay/rayservice.yaml is stale: python -m serve_app.ops.deploy kuberay --config config/serve_gpu.yaml"
    )
    assert KUBERAY_VERSION in OUT.read_text(encoding="utf-8").splitlines()[0]


def test_the_cli_check_fails_on_a_stale_manifest(tmp_path, capsys):
    out = tmp_path / "rayservice.yaml"
    assert main(["kuberay", "--config", str(GPU), "--out", str(out)]) == 0
    assert main(["kuberay", "--config", str(GPU), "--out", str(out), "--check"]) == 0
    out.write_text(out.read_text(encoding="utf-8").replace("maxReplicas: 8", "maxReplicas: 9"), encoding="utf-8")
    assert main(["kuberay", "--config", str(GPU), "--out", str(out), "--check"]) == 1
    assert "out of date" in capsys.readouterr().err


def test_it_validates_against_the_schema_of_the_fields_baton_emits(manifest):
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.validate(manifest, SCHEMA)
    assert "KubeRay v1.7.0" in SCHEMA["title"]


def test_the_schema_refuses_what_kuberay_would_not_take(manifest):
    """The schema can fail: an unknown field (KubeRay would prune it), a secret inlined next to its reference, a
    string replica count, a bad quantity."""
    broken = []
    for change in (
        lambda m: m["spec"].update(serveConfig="x"),
        lambda m: containers(m)[0]["env"].append(
            {"name": "X", "value": "1", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k"}}}
        ),
        lambda m: m["spec"]["rayClusterConfig"]["workerGroupSpecs"][0].update(minReplicas="2"),
        lambda m: containers(m)[0]["resources"]["limits"].update(memory="8 gigs"),
    ):
        bad = copy.deepcopy(manifest)
        change(bad)
        broken.append(not jsonschema.Draft202012Validator(SCHEMA).is_valid(bad))
    assert broken == [True] * 4


def test_serve_config_v2_is_the_gpu_config_pointed_at_the_image(manifest):
    embedded = yaml.safe_load(manifest["spec"]["serveConfigV2"])
    ServeDeploySchema.model_validate(embedded)
    assert embedded == in_image(load_serve_config(GPU, {}), "/app")
    assert embedded["applications"][0]["args"]["config_dir"] == "/app/config"


def test_secrets_are_references_and_no_value_is_rendered(monkeypatch, manifest):
    values = {"DATABASE_URL": "postgresql://baton:pg-s3cret@db:5432/baton", "BATON_AUTH_SECRET": "k8s-auth-s3cret" * 3}
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("BATON_METRICS_PORT", "30360")  # e.g. left by a local cluster in this process
    text = rayservice(GPU)
    assert text == OUT.read_text(encoding="utf-8")  # the environment plays no part
    assert not any(v in text for v in values.values())
    # which pods get them at all is tests/security/test_cluster.py's: the Orchestrator's group alone
    given = [e for container in containers(manifest) for e in container["env"] if e["name"] in SECRET_ENV]
    assert given, "the Orchestrator's pods read the secrets from a Secret"
    for env in given:
        assert "value" not in env and env["valueFrom"]["secretKeyRef"]["name"] == "baton-secrets", env["name"]


def test_every_deployment_has_a_group_the_head_runs_none(manifest):
    cluster = manifest["spec"]["rayClusterConfig"]
    assert cluster["headGroupSpec"]["rayStartParams"]["num-cpus"] == "0"
    groups = {g["groupName"]: g for g in cluster["workerGroupSpecs"]}
    gpu = groups["gpu"]["template"]["spec"]
    assert gpu["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == 1
    assert gpu["nodeSelector"] == {"nvidia.com/gpu.product": "NVIDIA-L4"}
    embedded = yaml.safe_load(manifest["spec"]["serveConfigV2"])
    for deployment in embedded["applications"][0]["deployments"]:
        wanted = deployment["ray_actor_options"]["label_selector"]
        assert any(wanted.items() <= g.get("labels", {}).items() for g in groups.values()), deployment["name"]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"num_gpus": 2}, "num_gpus 2"),
        ({"accelerator_type": "H100"}, "H100"),
        ({"label_selector": {"baton.dev/tpu": "true"}}, "baton.dev/tpu"),
    ],
)
def test_a_deployment_no_group_can_place_is_refused(change, named):
    config = load_serve_config(GPU, {})
    encoder = next(d for d in config["applications"][0]["deployments"] if d["name"] == "Encoder")
    encoder["ray_actor_options"].update(change)
    with pytest.raises(ValueError, match=f"no worker group can place Encoder.*{named}"):
        render(config, spec())


def test_a_cluster_spec_without_the_secrets_replicas_need_is_refused():
    raw = yaml.safe_load(CLUSTER.read_text(encoding="utf-8"))
    del raw["secret"]["keys"]["BATON_AUTH_SECRET"]
    with pytest.raises(ValidationError, match="BATON_AUTH_SECRET"):
        ClusterSpec.model_validate(raw)


def test_a_secret_the_settings_read_but_the_cluster_spec_does_not_map_is_refused():
    """The calendar's key and each LLM backend's key come from the Secret too, or rendering names what is missing."""
    raw = yaml.safe_load(CLUSTER.read_text(encoding="utf-8"))
    del raw["secret"]["keys"]["BATON_CALENDAR_KEY"]
    with pytest.raises(ValueError, match="BATON_CALENDAR_KEY"):
        render(load_serve_config(GPU, {}), ClusterSpec.model_validate(raw))
    config = load_serve_config(GPU, {})
    config["applications"][0]["args"].setdefault("overrides", {})["llm"] = {
        "backends": {"cloud": {"base_url": "https://llm.example.com/v1", "model": "m", "api_key_env": "CLOUD_LLM_KEY"}}
    }
    with pytest.raises(ValueError, match="CLOUD_LLM_KEY"):
        render(config, spec())


def test_env_prints_the_switches_a_ray_start_node_needs_and_no_secret(capsys, monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "postgresql://baton:pg-s3cret@db/baton")
    assert main(["env", "--config", str(ROOT / "config" / "serve_multinode.yaml")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "export RAY_SERVE_HTTP_PROXY_CALLBACK_IMPORT_PATH=serve_app.ops.proxy_envelope:proxy_middlewares" in lines
    assert "export RAY_SERVE_ENABLE_HA_PROXY=1" in lines and not any(
        "s3cret" in line or "DATABASE_URL" in line for line in lines
    )
