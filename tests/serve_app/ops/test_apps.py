"""Both assistants in one cluster, from the one-app config (no Ray running): one Serve application per pack under its
own route prefix, each with its own Orchestrator, text models and autoscaling; ASR, OCR and the Planner deployed once,
by the first pack's app, and called by the other's; every app told the cluster's packs and the replicas sharing the
database."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from ray.serve._private.build_app import build_app
from ray.serve.schema import ServeDeploySchema

from serve_app.args import INGRESS, MEDIA, PLANNER, AppArgs
from serve_app.ops.apps import packs_of, per_pack, route_prefixes
from serve_app.ops.launcher import build_applications, load_serve_config

ROOT = Path(__file__).resolve().parents[3]
CONFIG = ROOT / "config"
LOCAL = {"serve_local.yaml", "serve_local_fused.yaml", "serve_local_split.yaml"}
SHARED = {*MEDIA.values(), PLANNER}


def both(name: str = "serve_local.yaml", **env: str) -> dict:
    return load_serve_config(CONFIG / name, {"BATON_APPS": "all", **env})


def test_all_is_every_shipped_pack_cockpit_first_and_a_list_is_taken_as_given():
    assert packs_of("all", CONFIG) == ["cockpit", "timeflow"]
    assert packs_of("timeflow, cockpit", CONFIG) == ["timeflow", "cockpit"]
    for bad in ("", " , ", "cockpit,cockpit"):
        with pytest.raises(ValueError, match="BATON_APPS"):
            packs_of(bad, CONFIG)


def test_without_baton_apps_the_config_serves_one_pack_at_the_root():
    config = load_serve_config(CONFIG / "serve_local.yaml", {"BATON_PACK": "timeflow"})
    assert route_prefixes(config) == {"baton": "/"}
    assert config["applications"][0]["args"]["pack"] == "timeflow"


@pytest.mark.parametrize("name", sorted(LOCAL))
def test_one_application_per_pack_under_its_prefix_sharing_the_models_that_are_the_same(name):
    config = both(name, BATON_PACK="timeflow")  # BATON_APPS wins: every pack is served
    ServeDeploySchema.model_validate(config)  # what a Serve controller accepts: names and prefixes unique
    assert route_prefixes(config) == {"cockpit": "/cockpit", "timeflow": "/timeflow"}
    cockpit, timeflow = (AppArgs.model_validate(app["args"]) for app in config["applications"])
    assert (cockpit.pack, timeflow.pack) == ("cockpit", "timeflow")
    assert cockpit.shared_from is None and timeflow.shared_from == "cockpit"
    assert cockpit.assistants == timeflow.assistants == {"cockpit": "/cockpit", "timeflow": "/timeflow"}
    configured = [{d["name"] for d in app["deployments"]} for app in config["applications"]]
    assert configured[0] == set(cockpit.deployment_names()) and SHARED <= configured[0]
    assert configured[1] == set(timeflow.deployment_names()) == configured[0] - SHARED
    # each app's own ingress and text models keep the one-app config's options (autoscaling, queues, CPU shares)
    one = {d["name"]: d for d in load_serve_config(CONFIG / name, {})["applications"][0]["deployments"]}
    for app in config["applications"]:
        for deployment in app["deployments"]:
            assert deployment == one[deployment["name"]], (app["name"], deployment["name"])
    # a timeflow turn calls the cockpit app's ASR, OCR and Planner: readiness waits for them there
    awaited = timeflow.awaited_deployments("timeflow")
    assert {d for app, d in awaited if app == "cockpit"} == SHARED
    assert {d for app, d in awaited if app == "timeflow"} == configured[1]


def test_each_app_builds_with_its_own_deployments_and_the_orchestrators_share_the_database_pool_check():
    config = both()
    built = {
        target.name: {d.name for d in build_app(target.target, name=target.name).deployments}
        for target in build_applications(config)
    }
    assert built == {"cockpit": {INGRESS, *SHARED}, "timeflow": {INGRESS}}  # inline: the text models in the ingress
    orchestrator = next(d for d in config["applications"][0]["deployments"] if d["name"] == INGRESS)
    replicas = orchestrator["autoscaling_config"]["max_replicas"]
    assert {app["args"]["pool_replicas"] for app in config["applications"]} == {2 * replicas}


def test_the_shared_deployments_follow_the_app_args():
    """A text-only app (media: false) with no LLM shares nothing; the split layout's text models stay per app."""
    args = {"layout": "split", "media": False, "planner": "none"}
    assert AppArgs.model_validate(args).shared_kinds() == {}
    split = AppArgs.model_validate({"layout": "split", "planner": "vllm", "shared_from": "cockpit"})
    assert set(split.deployment_names()) == {
        INGRESS,
        "Encoder",
        "IntentClassifier",
        "MultiIntentDetector",
        "EmbeddingRetriever",
    }
    assert split.shared_kinds() == {"asr": "ASR", "ocr": "OCR", "planner": PLANNER}


def test_only_a_one_app_config_is_split_per_pack():
    config = yaml.safe_load((CONFIG / "serve_local.yaml").read_text(encoding="utf-8"))
    twice = {**config, "applications": config["applications"] * 2}
    with pytest.raises(ValueError, match="one Baton application"):
        per_pack(twice, ["cockpit", "timeflow"])


def test_no_secret_enters_either_app():
    secrets = {"DATABASE_URL": "postgresql://baton:pg-s3cret@db/baton", "BATON_AUTH_SECRET": "auth-s3cret-" * 4}
    shown = json.dumps(both(**secrets))
    assert not any(value in shown for value in secrets.values())


def test_a_kuberay_rayservice_of_both_packs_sizes_the_database_for_both_orchestrators():
    from serve_app.ops.deploy import rayservice

    one, two = rayservice(CONFIG / "serve_gpu.yaml"), rayservice(CONFIG / "serve_gpu.yaml", apps="all")
    assert "route_prefix: /timeflow" in two and "route_prefix: /timeflow" not in one
    assert "10 x 8 = 80 connections" in one and "10 x 16 = 160 connections" in two


def test_one_machines_ray_has_room_for_the_second_app_scaled_out(monkeypatch):
    """The timeflow app's Orchestrator (0.5 CPU, up to 2 replicas) on top of what cockpit alone has: Ray starts with
    the cores plus that; one app alone gets the cores, counted by Ray as before."""
    from serve_app.ops import launcher
    from serve_app.ops.apps import cpu_demand

    monkeypatch.setattr(launcher.os, "cpu_count", lambda: 2)
    one = load_serve_config(CONFIG / "serve_local.yaml", {})
    assert launcher.logical_cpus(one) is None
    assert cpu_demand(both()) == cpu_demand(one) + 1.0 and launcher.logical_cpus(both()) == 3
