"""Every Serve config builds the same app from data alone: the laptop, the multi-node and the GPU cluster configs pass
Serve's own schema and the app builder on this machine with no GPU and no Ray running; GPU-bound settings (devices,
GPU shares, accelerator types, placement labels) are data in the file; no secret enters a config or a built app."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from ray.serve._private.build_app import build_app
from ray.serve.schema import ServeDeploySchema

from serve_app.args import AppArgs
from serve_app.ops.launcher import build_applications, load_serve_config, replica_environment
from serve_app.ops.node_env import SECRET_ENV, selected_labels

ROOT = Path(__file__).resolve().parents[3]
CONFIGS = sorted((ROOT / "config").glob("serve_*.yaml"))
GPU = ROOT / "config" / "serve_gpu.yaml"
MULTINODE = ROOT / "config" / "serve_multinode.yaml"
SECRETS = {
    "DATABASE_URL": "postgresql://baton:pg-s3cret-value@db.internal/baton",
    "BATON_AUTH_SECRET": "auth-s3cret-" * 4,
}


class LlmServerStandIn:
    """The Planner's place in an app built where ray.serve.llm cannot import (vLLM is not installed in this venv),
    with the Serve options the config gives it. The LLMServer itself is built from the same config in tests/llm."""


@pytest.fixture(autouse=True)
def llm_configs(monkeypatch) -> list[dict]:
    """The LLMConfigs the builder was given (serve_app.replicas.serve_llm's builder, stood in for)."""
    from ray import serve

    import serve_app.replicas.serve_llm as serve_llm

    seen: list[dict] = []

    def stand_in(llm_config: dict, options: dict):
        seen.append(llm_config)
        return serve.deployment(LlmServerStandIn, name="Planner", **options).bind()

    monkeypatch.setattr(serve_llm, "serve_llm_deployment", stand_in)
    return seen


def built(path: Path, env: dict[str, str] | None = None) -> dict[str, dict]:
    """Deployment name -> its built options, as Serve would receive them from the launcher."""
    config = load_serve_config(path, env or {})
    (target,) = build_applications(config)
    return {
        d.name: {"ray_actor_options": d.ray_actor_options or {}, "config": d._deployment_config}
        for d in build_app(target.target, name="baton").deployments
    }


def test_the_shipped_serve_configs_are_all_here():
    assert [p.name for p in CONFIGS] == [
        "serve_gpu.yaml",
        "serve_local.yaml",
        "serve_local_fused.yaml",
        "serve_local_split.yaml",
        "serve_multinode.yaml",
    ]


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_each_config_passes_serves_schema_and_builds_without_a_gpu(path):
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    ServeDeploySchema.model_validate(raw)  # what a Serve controller (and KubeRay's serveConfigV2) accepts
    args = AppArgs.model_validate(load_serve_config(path, {})["applications"][0]["args"])
    args.settings()  # the overrides merged over baton.yaml validate here, devices included
    deployments = built(path)
    assert set(deployments) == set(args.deployment_names())
    configured = {d["name"] for d in raw["applications"][0]["deployments"]}
    assert configured == set(deployments), "every deployment of the layout is configured, and nothing else"


def test_the_laptops_three_layouts_differ_in_their_layout_and_its_model_deployments_alone():
    """One machine's configs (inline for `make run`, fused and split for the benchmark) cannot drift apart: everything
    but the layout and the deployments of its text models is the same."""

    def rest(name: str) -> dict:
        raw = yaml.safe_load((ROOT / "config" / name).read_text(encoding="utf-8"))
        app = raw["applications"][0]
        layout = app["args"].pop("layout")
        text = set(AppArgs.model_validate({"layout": layout, "media": False}).model_kinds().values())
        app["deployments"] = [d for d in app["deployments"] if d["name"] not in text]
        return raw

    assert rest("serve_local.yaml") == rest("serve_local_fused.yaml") == rest("serve_local_split.yaml")


def test_the_gpu_config_puts_models_on_gpus_and_turns_production_posture_on(llm_configs):
    settings = AppArgs.model_validate(load_serve_config(GPU, {})["applications"][0]["args"]).settings()
    assert (settings.models.device, settings.models.encoder_runtime, settings.asr.device, settings.ocr.device) == (
        "cuda",
        "torch",
        "cuda",
        "cuda",
    )
    assert settings.asr.compute_type == "float16" and "large" in settings.asr.model_path
    assert settings.auth.require_token and not settings.auth.generate_secret
    assert settings.serving.metrics_host == "0.0.0.0" and settings.media.object_store.backend == "s3"
    deployments = built(GPU)
    gpus = {name: d["ray_actor_options"].get("num_gpus", 0) for name, d in deployments.items()}
    assert gpus == {
        "Orchestrator": 0,
        "Encoder": 0.25,
        "IntentClassifier": 0,
        "MultiIntentDetector": 0,
        "EmbeddingRetriever": 0,
        "ASR": 0.5,
        "OCR": 0.25,
        "Planner": 0,
    }
    # the Planner: Ray Serve LLM with a Qwen instruct model on a whole GPU of its accelerator type (its placement group
    # comes from the LLMConfig: tests/llm/test_serve_llm.py builds it where vLLM is installed)
    (llm,) = llm_configs
    assert "Qwen" in llm["model_loading_config"]["model_source"] and llm["accelerator_type"] == "L4"
    assert settings.budgets.turn_ms["llm"] < 3000 and settings.llm.generate_replies
    for name, share in gpus.items():
        options = deployments[name]["ray_actor_options"]
        assert ("accelerator_type" in options) == (share > 0), name
        role = {"Orchestrator": "baton.dev/ingress", "Planner": "baton.dev/llm"}.get(name, "baton.dev/models")
        assert options["label_selector"] == {role: "true"}, name
        autoscaling = deployments[name]["config"].autoscaling_config
        assert autoscaling is not None and autoscaling.upscale_delay_s <= 5, name


def test_the_multinode_config_puts_the_ingress_and_the_models_on_different_nodes():
    deployments = built(MULTINODE)
    assert deployments["Orchestrator"]["ray_actor_options"]["label_selector"] == {"baton.dev/ingress": "true"}
    assert deployments["NLU"]["ray_actor_options"]["label_selector"] == {"baton.dev/models": "true"}
    assert deployments["NLU"]["config"].num_replicas == 2


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_one_machine_carries_every_label_a_config_selects(path):
    config = load_serve_config(path, {})
    labels = selected_labels(config)
    for app in config["applications"]:
        for deployment in app["deployments"]:
            wanted = deployment.get("ray_actor_options", {}).get("label_selector", {})
            assert wanted.items() <= labels.items(), deployment["name"]


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.stem)
def test_no_secret_enters_a_serve_config_or_a_built_app(path, tmp_path):
    """The launcher hands the secrets to Ray's processes as their environment; the Serve config, its runtime_env and
    the options Serve receives for every deployment (which its API and dashboard show) never hold them."""
    data = json.dumps(yaml.safe_load(path.read_text(encoding="utf-8")))
    assert not any(name in data for name in SECRET_ENV) and "postgres" not in data.lower()
    env = {"BATON_STATE_DIR": str(tmp_path), **SECRETS}
    config = load_serve_config(path, env)
    assert replica_environment(config, env).items() >= SECRETS.items()  # the processes' environment carries them
    shown = json.dumps(config, default=str) + json.dumps(built(path, env), default=str)
    assert not any(value in shown for value in SECRETS.values())
    for app in config["applications"]:
        assert not set(app.get("runtime_env", {}).get("env_vars", {})) & set(SECRET_ENV)
