"""Several packs in one cluster: the one-app Serve config turned into one Serve application per pack.

Each pack's application is named after the pack and served under the route prefix `/<pack>` (so `/cockpit/api/v1/...`
and `/timeflow/api/v1/...`, `/cockpit/health`, `/timeflow/ws/v1/conversation`, `/cockpit/demo`), with its own
Orchestrator and text models, their autoscaling and queue limits as the one-app config gives them. The deployments
whose model is the same whatever the pack — ASR, OCR and the Planner — are deployed once, by the first pack's
application; the others call them (`AppArgs.shared_from`, a handle from `serve.get_deployment_handle`). Every app is
told the cluster's packs (`assistants`, the demo page's chooser) and how many Orchestrator replicas share the
database (`pool_replicas`). `BATON_APPS` selects it in the launcher: `all` (every shipped pack) or a list of packs.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from serve_app.args import INGRESS, AppArgs

ALL = "all"
APP_NAME = "baton"  # the application of a one-pack config


def packs_of(spec: str, config_dir: Path) -> list[str]:
    """The packs `BATON_APPS` names: `all` (the shipped packs, `domains/` under `config_dir`, cockpit first) or a
    comma-separated list; the first pack's app deploys the shared models."""
    if spec.strip() == ALL:
        shipped = sorted(p.name for p in (config_dir / "domains").iterdir() if (p / "pack.yaml").exists())
        return sorted(shipped, key=lambda name: name != "cockpit")
    packs = [p.strip() for p in spec.split(",") if p.strip()]
    if not packs or len(set(packs)) != len(packs):
        raise ValueError(f"BATON_APPS must be 'all' or distinct pack names separated by commas, not {spec!r}.")
    return packs


def per_pack(config: dict[str, Any], packs: Sequence[str]) -> dict[str, Any]:
    """`config` (a Serve config of one Baton application) with that application replaced by one per pack."""
    if len(config.get("applications", [])) != 1:
        raise ValueError("Serving several packs starts from a Serve config of one Baton application.")
    (app,) = config["applications"]
    owner = packs[0]
    shared = set(AppArgs.model_validate(app.get("args", {})).shared_kinds().values())
    orchestrators = _max_replicas(app) * len(packs)
    apps = []
    for pack in packs:
        one = copy.deepcopy(app)
        one["name"], one["route_prefix"] = pack, f"/{pack}"
        args = one.setdefault("args", {})
        args.update(pack=pack, assistants={p: f"/{p}" for p in packs}, pool_replicas=orchestrators)
        if pack != owner:
            args["shared_from"] = owner
            one["deployments"] = [d for d in one.get("deployments", []) if d["name"] not in shared]
        apps.append(one)
    return {**config, "applications": apps}


def _max_replicas(app: dict[str, Any]) -> int:
    """The most Orchestrator replicas the app may run (its autoscaling max_replicas, else num_replicas, else 1)."""
    for deployment in app.get("deployments", []):
        if deployment["name"] == INGRESS:
            auto = deployment.get("autoscaling_config") or {}
            return int(auto.get("max_replicas") or deployment.get("num_replicas") or 1)
    return 1


def cpu_demand(config: dict[str, Any]) -> float:
    """The logical CPUs every deployment of every app holds at its most replicas: one machine's Ray needs that many
    (two packs' Orchestrators scaled out hold twice one's), or the last replicas wait unscheduled."""
    total = 0.0
    for app in config["applications"]:
        for deployment in app.get("deployments", []):
            auto = deployment.get("autoscaling_config") or {}
            replicas = auto.get("max_replicas") or deployment.get("num_replicas") or 1
            total += float((deployment.get("ray_actor_options") or {}).get("num_cpus", 1)) * int(replicas)
    return total


def route_prefixes(config: dict[str, Any]) -> dict[str, str]:
    """Application name → route prefix of every application in `config` (Serve's defaults filled in)."""
    return {app.get("name", APP_NAME): app.get("route_prefix", "/") for app in config["applications"]}
