"""The Orchestrator deployment: FastAPI under @serve.ingress, composing the model deployments through handles,
with sessions, the conversation log and accounts in PostgreSQL (one asyncpg pool per replica)."""
from __future__ import annotations

import os

from fastapi import FastAPI
from ray import serve
from ray.serve.handle import DeploymentHandle

from engine.pack import find_pack, load_pack
from engine.plugins import PluginRegistry
from engine.session import InMemorySessionStore
from engine.turn import TurnEngine
from serve_app.app_args import AppArgs
from serve_app.admission import Admission
from serve_app.handle_client import HandleModels
from serve_app.http_api import Serving, create_api
from serve_app.auth import Auth, signing_secret
from serve_app.media_client import HandleMedia
from media.store import build_store
from media.uploads import MediaUploads
from serve_app.metrics import TurnMetrics
from serve_app.rest_api import Persistence
from serve_app.stored_chat import StoredChat
from store.database import Database

# One engine per replica process. Serve builds the ASGI app (below) right after Orchestrator.__init__
# runs in the replica, so the constructor leaves the engine here for the app factory to pick up.
_replica_serving: list[Serving] = []


REPLICA_HEADER = "X-Baton-Replica"


def _replica_api() -> FastAPI:
    api = create_api()
    api.state.serving = _replica_serving[-1]
    replica = serve.get_replica_context().replica_id.unique_id

    @api.middleware("http")
    async def name_the_replica(request, call_next):
        # which orchestrator replica answered: sessions are shared, so a conversation may move between them
        response = await call_next(request)
        response.headers[REPLICA_HEADER] = replica
        return response

    return api


@serve.ingress(_replica_api)
class Orchestrator:
    async def __init__(self, classifier: DeploymentHandle, detector: DeploymentHandle, retriever: DeploymentHandle, args: dict,
                       asr: DeploymentHandle | None = None, ocr: DeploymentHandle | None = None) -> None:
        settings = AppArgs.model_validate(args).settings()
        dsn = os.environ.get("DATABASE_URL")
        if not dsn:
            raise RuntimeError("DATABASE_URL is not set: start Baton with `make run` (embedded PostgreSQL) or set it.")
        pack = load_pack(find_pack(settings.pack, shipped_dir=settings.packs_dir, state_dir=settings.state_dir))
        engine = TurnEngine(
            pack=pack, settings=settings,
            models=HandleModels(classifier=classifier, detector=detector, retriever=retriever),
            sessions=InMemorySessionStore(settings.session.ttl_s),
            plugins=PluginRegistry(),
            media=HandleMedia(asr=asr, ocr=ocr) if asr and ocr else None,
        )
        db = await Database.open(dsn, settings.store)  # applies pending migrations under an advisory lock
        auth = Auth(settings.auth, signing_secret(settings.auth, settings.state_dir, os.environ))
        persistence = Persistence(db=db, auth=auth, chat=StoredChat(engine, db, settings), settings=settings)
        serving = Serving(engine=engine, admission=Admission(settings.serving.max_in_flight_turns),
                          metrics=TurnMetrics(), retry_after_s=settings.serving.retry_after_s, persistence=persistence,
                          uploads=MediaUploads(store=build_store(settings), cfg=settings.media))
        if settings.serving.metrics_port:
            serving.metrics.serve(settings.serving.metrics_port)
        _replica_serving.append(serving)
