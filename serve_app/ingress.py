"""The Orchestrator deployment: FastAPI under @serve.ingress, composing the model deployments through handles."""
from __future__ import annotations

from fastapi import FastAPI
from ray import serve
from ray.serve.handle import DeploymentHandle

from engine.pack import find_pack, load_pack
from engine.plugins import PluginRegistry
from engine.session import InMemorySessionStore
from engine.turn import TurnEngine
from serve_app.app_args import AppArgs
from serve_app.handle_client import HandleModels
from serve_app.http_api import create_api

# One engine per replica process. Serve builds the ASGI app (below) right after Orchestrator.__init__
# runs in the replica, so the constructor leaves the engine here for the app factory to pick up.
_replica_engine: list[TurnEngine] = []


def _replica_api() -> FastAPI:
    api = create_api()
    api.state.engine = _replica_engine[-1]
    return api


@serve.ingress(_replica_api)
class Orchestrator:
    def __init__(self, classifier: DeploymentHandle, detector: DeploymentHandle, retriever: DeploymentHandle, args: dict) -> None:
        settings = AppArgs.model_validate(args).settings()
        pack = load_pack(find_pack(settings.pack, shipped_dir=settings.packs_dir, state_dir=settings.state_dir))
        _replica_engine.append(TurnEngine(
            pack=pack, settings=settings,
            models=HandleModels(classifier=classifier, detector=detector, retriever=retriever),
            sessions=InMemorySessionStore(settings.session.ttl_s),
            plugins=PluginRegistry(),
        ))
