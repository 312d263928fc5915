"""The Orchestrator deployment: FastAPI under @serve.ingress, composing the model deployments through handles,
with sessions, the conversation log and accounts in PostgreSQL (one asyncpg pool per replica)."""
from __future__ import annotations

import asyncio
import os
from pathlib import Path

from fastapi import FastAPI
from ray import serve
from ray.serve.handle import DeploymentHandle

from deployments.faults import FAULTS_FILE_ENV, FaultSet, StageFaults
from deployments.nlu import shared_heads
from engine.llm.dspy_engine import dspy_lm
from engine.llm.planner import LlmWorkflowPlanner
from engine.llm.replies import ReplyWriter
from engine.llm.prompts import PromptSet
from engine.model_client import ENCODER, HEADS, ModelClient
from engine.pack import find_pack, load_pack
from engine.plugins import PluginRegistry
from engine.session import InMemorySessionStore
from engine.settings import Settings
from engine.turn import TurnEngine
from media.store import build_store
from models.artifacts import served_settings
from media.uploads import MediaUploads
from serve_app.admission import Admission
from serve_app.app_args import AppArgs
from serve_app.auth import Auth, signing_secret
from serve_app.conversation import build_conversation
from serve_app.handle_client import FusedHandleModels, SplitHandleModels
from serve_app.heap import freeze_startup_heap
from serve_app.http_api import Serving, create_api
from serve_app.llm_client import HandleLanguageModel
from serve_app.media_client import HandleMedia
from serve_app.metrics import MULTIPROC_ENV, LlmMetrics, TurnMetrics
from serve_app.readiness import AppReadiness
from serve_app.rest_api import Persistence
from serve_app.stored_chat import StoredChat
from store.database import Database

# A replica warms up before its constructor returns, so Serve (and HAProxy) never route to it cold — on a first
# deploy that includes waiting for the model replicas to load, minutes on a busy 2-core machine. Only a warm-up
# that cannot pass this long (a broken deployment) lets the replica start anyway, answering 503 `starting` with
# the reason on /health while it keeps trying.
CONSTRUCTOR_WARMUP_S = 300.0


def model_client(models: dict[str, DeploymentHandle], settings: Settings) -> ModelClient:
    """The layout's client: one NLU handle (fused) or the Encoder and head handles (split).

    `serving.model_calls: grpc` sends each call by value over the replica's gRPC server instead of as a Ray actor
    task: idle, a call to a replica took 2.9 against 5.0 ms here (config/TUNING.md), and a turn's text models are
    called on every turn. A split layout's encoder response is then resolved by the orchestrator and sent on."""
    if settings.serving.model_calls == "grpc":
        models = {name: handle.options(_by_reference=False) for name, handle in models.items()}
    if "nlu" in models:
        return FusedHandleModels(models["nlu"])
    return SplitHandleModels(encoder=models[ENCODER], heads={h: models[h] for h in HEADS}, shared=shared_heads(settings.models))


@serve.ingress()
class Orchestrator:
    async def __init__(self, models: dict[str, DeploymentHandle], media: dict[str, DeploymentHandle], args: dict) -> None:
        app_args = AppArgs.model_validate(args)
        settings = served_settings(app_args.settings())  # with the fusion values the built pack chose
        dsn = os.environ.get("DATABASE_URL")
        if not dsn:
            raise RuntimeError("DATABASE_URL is not set: start Baton with `make run` (embedded PostgreSQL) or set it.")
        pack_dir = find_pack(settings.pack, shipped_dir=settings.packs_dir, state_dir=settings.state_dir)
        pack = load_pack(pack_dir)
        prompts = PromptSet.load(pack_dir, settings.prompts)  # a pack missing a required prompt file does not start; the error names it
        llm_metrics = LlmMetrics()
        llm = language_model(app_args, models.pop("planner"), llm_metrics) if "planner" in models else None
        llm_planner = LlmWorkflowPlanner.configured(llm.for_route("planner"), pack, prompts, settings) if llm else None
        engine = TurnEngine(
            pack=pack, settings=settings, models=model_client(models, settings),
            sessions=InMemorySessionStore(settings.session.ttl_s), plugins=PluginRegistry(),
            media=HandleMedia(asr=media["asr"], ocr=media["ocr"]) if {"asr", "ocr"} <= media.keys() else None,
            faults=StageFaults(os.environ.get("BATON_FAULTS", ""),
                               Path(os.environ[FAULTS_FILE_ENV]) if os.environ.get(FAULTS_FILE_ENV) else None),
            llm_planner=llm_planner,
            replies=ReplyWriter(dspy_lm(llm.for_route("reply"), max_tokens=settings.llm.reply_max_tokens),
                                budget_s=settings.budgets.stage_s("reply")) if llm and settings.llm.generate_replies else None,
        )
        db = await Database.open(dsn, settings.store)  # applies pending migrations under an advisory lock
        auth = Auth(settings.auth, signing_secret(settings.auth, settings.state_dir, os.environ))
        self.serving = Serving(engine=engine, admission=Admission(settings.serving.admission),
                               metrics=TurnMetrics(multiproc_dir=os.environ.get(MULTIPROC_ENV)),
                               retry_after_s=settings.serving.retry_after_s,
                               persistence=Persistence(db=db, auth=auth, chat=StoredChat(engine, db, settings), settings=settings),
                               uploads=MediaUploads(store=build_store(settings), cfg=settings.media),
                               llm=llm, llm_planner=llm_planner, llm_metrics=llm_metrics)
        self.serving.conversation = build_conversation(self.serving)
        if settings.serving.metrics_port:
            self.serving.metrics.serve(settings.serving.metrics_port, host=settings.serving.metrics_host)
        context = serve.get_replica_context()
        self._replica = context.replica_id.unique_id
        deployments = [d for d in app_args.deployment_names() if d != context.deployment]
        readiness = AppReadiness(serving=self.serving, replica=self._replica,
                                 deployments_running=lambda: deployments_running(context.app_name, deployments),
                                 allowed_degraded=frozenset(FaultSet.parse(os.environ.get("BATON_FAULTS", "")).faults))
        self.serving.readiness = readiness
        if not await readiness.until_ready(within_s=CONSTRUCTOR_WARMUP_S):
            self._warming = asyncio.ensure_future(self._warm_up(readiness))

    @staticmethod
    async def _warm_up(readiness: AppReadiness) -> None:
        """Serve freezes a replica's heap when its constructor returns; what a late warm-up loads is frozen here."""
        await readiness.until_ready()
        freeze_startup_heap()

    def __serve_build_asgi_app__(self) -> FastAPI:
        api = create_api(replica=self._replica)
        api.state.serving = self.serving
        return api

    def check_health(self) -> None:
        """This replica's own state only; the other deployments' readiness is /health's business."""


def language_model(args: AppArgs, handle: DeploymentHandle, metrics: LlmMetrics):
    """The engine's LanguageModel over the Planner: Baton's own deployment (dicts), or Ray Serve LLM's LLMServer."""
    if args.planner == "serve_llm":
        from serve_app.serve_llm import ServeLlmLanguageModel

        return ServeLlmLanguageModel(handle, args.llm_config["model_loading_config"]["model_id"], metrics)
    return HandleLanguageModel(handle, metrics)


async def deployments_running(app_name: str, names: list[str]) -> str | None:
    """None when every named deployment of the app has a running replica, else what is still missing."""
    status = await asyncio.to_thread(serve.status)
    app = status.applications.get(app_name)
    if app is None:
        return f"application {app_name!r} is not deployed yet"
    waiting = [f"{n} ({app.deployments[n].status})" if n in app.deployments else f"{n} (not created)"
               for n in names if n not in app.deployments or not app.deployments[n].replica_states.get("RUNNING")]
    return f"waiting for {', '.join(waiting)}" if waiting else None
