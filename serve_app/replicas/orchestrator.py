"""The Orchestrator: the app's ingress, a plain class that the builder wraps with `serve.ingress` and binds to the
model deployments' handles. It builds the app state once, warms up, and hands Serve the FastAPI app."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any, cast

from fastapi import FastAPI
from ray import serve
from ray.serve.context import ReplicaContext
from ray.serve.handle import DeploymentHandle

from config.settings import Settings
from deployments.artifacts import served_settings
from deployments.faults import FaultSet
from deployments.nlu import shared_heads
from engine.llm.lm import RoutedLanguageModel
from engine.model_client import ENCODER, HEADS, ModelClient
from serve_app.args import MEDIA, AppArgs
from serve_app.http.api import create_api
from serve_app.metrics import LlmMetrics
from serve_app.readiness import AppReadiness, Readiness
from serve_app.replicas.clients import FusedHandleModels, SplitHandleModels
from serve_app.replicas.heap import freeze_startup_heap
from serve_app.replicas.inline import InlineModels
from serve_app.replicas.llm_client import HandleLanguageModel
from serve_app.replicas.media_client import HandleMedia
from serve_app.state import ModelClients, attach, build_state
from store.capacity import ensure_pool_fits
from store.database import Database

# A replica warms up before its constructor returns, so Serve (and HAProxy) never route to it cold — on a first
# deploy that includes waiting for the model replicas to load, minutes on a busy 2-core machine. Only a warm-up
# that cannot pass this long (a broken deployment) lets the replica start anyway, answering 503 `starting` with
# the reason on /health while it keeps trying.
CONSTRUCTOR_WARMUP_S = 300.0
Connect = Callable[[str, Any], Awaitable[Database]]


class Orchestrator:
    async def __init__(  # type: ignore[misc]  # Serve awaits an async constructor
        self,
        models: dict[str, DeploymentHandle],
        media: dict[str, DeploymentHandle],
        args: dict[str, Any],
        *,
        connect: Connect = Database.open,
    ) -> None:
        """`models`: the text models' handles (and the Planner's, under `planner`); `media`: ASR's and OCR's; `args`:
        the app's `AppArgs`. `connect(dsn, database settings)` opens the pool (PostgreSQL's, by default)."""
        app_args = AppArgs.model_validate(args)
        settings = served_settings(app_args.settings())  # with the fusion values the built pack chose
        if settings.env.database_url is None:
            raise RuntimeError("DATABASE_URL is not set: start Baton with `make run` (embedded PostgreSQL) or set it.")
        context = serve.get_replica_context()
        dsn = settings.env.database_url.get_secret_value()
        # every replica's pool must fit the server: refuse to start, naming the figures, rather than fail turns later
        # (every app's replicas, when several packs share the database)
        await ensure_pool_fits(dsn, settings.database, replicas=app_args.pool_replicas or max_replicas(context))
        llm_metrics = LlmMetrics()
        self._inline = await InlineModels.start(settings) if app_args.layout == "inline" else None
        models, media = {**models, **shared_handles(app_args, "models")}, {**media, **shared_handles(app_args, "media")}
        clients = model_clients(app_args, settings, models, media, llm_metrics, inline=self._inline)
        db = await connect(dsn, settings.database)  # migrates under a lock
        self.state = build_state(
            settings,
            clients,
            db,
            readiness=Readiness(ready=False, reason="warming up"),
            llm_metrics=llm_metrics,
            assistants=app_args.assistants,
        )
        if self.state.calendars is not None:
            self.state.calendars.start()  # background CalDAV sync, beside the turns
        if settings.serving.metrics_port:
            self.state.metrics.serve(settings.serving.metrics_port, host=settings.serving.metrics_host)
        self._replica = context.replica_id.unique_id
        awaited = [d for d in app_args.awaited_deployments(context.app_name) if d[1] != context.deployment]
        readiness = AppReadiness(
            state=self.state,
            replica=self._replica,
            deployments_running=lambda: deployments_running(awaited),
            models=clients.nlu,
            report=self.state.metrics.warm_up_degraded,
            allowed_degraded=frozenset(FaultSet.parse(settings.env.faults).faults),
        )
        if await readiness.until_ready(within_s=CONSTRUCTOR_WARMUP_S):
            self._warming = asyncio.ensure_future(readiness.while_degraded())
        else:
            self._warming = asyncio.ensure_future(self._warm_up(readiness))

    @staticmethod
    async def _warm_up(readiness: AppReadiness) -> None:
        """Serve freezes a replica's heap when its constructor returns; what a late warm-up loads is frozen here."""
        await readiness.until_ready()
        freeze_startup_heap()
        await readiness.while_degraded()

    def __serve_build_asgi_app__(self) -> FastAPI:
        return attach(create_api(replica=self._replica), self.state)

    async def stats(self) -> dict[str, Any]:
        """The text models' counters in this replica (the `inline` layout; a model deployment answers its own), and
        `pid` to tell replicas apart, since a handle reaches one of them per call."""
        body = self._inline.body.stats() if self._inline is not None else {}
        return {**body, "pid": os.getpid()}

    def check_health(self) -> None:
        """This replica's own state only; the other deployments' readiness is /health's business."""


def max_replicas(context: ReplicaContext) -> int:
    """The most replicas Serve may run of this deployment: its autoscaling max_replicas, else num_replicas."""
    config = context._deployment_config
    auto = config.autoscaling_config
    return int(auto.max_replicas) if auto is not None else int(config.num_replicas or 1)


def model_clients(
    args: AppArgs,
    settings: Settings,
    models: dict[str, DeploymentHandle],
    media: dict[str, DeploymentHandle],
    llm_metrics: LlmMetrics,
    *,
    inline: ModelClient | None = None,
) -> ModelClients:
    """The engine's clients over this app's handles: the layout's text models (`inline`: already in this replica),
    ASR and OCR, the language model."""
    planner = models.pop("planner", None)
    return ModelClients(
        nlu=inline or model_client(models, settings),
        media=HandleMedia(asr=media["asr"], ocr=media["ocr"]) if {"asr", "ocr"} <= media.keys() else None,
        llm=language_model(args, planner, llm_metrics) if planner is not None else None,
    )


def model_client(models: dict[str, DeploymentHandle], settings: Settings) -> ModelClient:
    """The layout's client: one NLU handle (fused) or the Encoder and head handles (split).

    `serving.model_calls: grpc` sends each call by value over the replica's gRPC server instead of as a Ray actor
    task: idle, a call to a replica took 2.9 against 5.0 ms here (config/TUNING.md), and a turn's text models are
    called on every turn. A split layout's encoder response is then resolved by the orchestrator and sent on."""
    if settings.serving.model_calls == "grpc":
        models = {name: handle.options(_by_reference=False) for name, handle in models.items()}
    if "nlu" in models:
        return FusedHandleModels(models["nlu"])
    return SplitHandleModels(
        encoder=models[ENCODER], heads={h: models[h] for h in HEADS}, shared=shared_heads(settings.models)
    )


def language_model(args: AppArgs, handle: DeploymentHandle, metrics: LlmMetrics) -> RoutedLanguageModel:
    """The engine's LanguageModel over the Planner: Baton's own deployment (dicts), or Ray Serve LLM's LLMServer."""
    if args.planner == "serve_llm":
        from serve_app.replicas.serve_llm import ServeLlmLanguageModel

        return ServeLlmLanguageModel(handle, args.llm_config["model_loading_config"]["model_id"], metrics)
    return HandleLanguageModel(handle, metrics)


def shared_handles(args: AppArgs, group: str) -> dict[str, DeploymentHandle]:
    """The handles, kind → handle, of the deployments this app shares from `args.shared_from` (none when it deploys its
    own): ASR and OCR (`group` "media") or the Planner ("models"). Not checked to exist: the other app may still be
    building when this replica starts; readiness waits until they run."""
    if args.shared_from is None:
        return {}
    return {
        kind: serve.get_deployment_handle(name, app_name=args.shared_from, _check_exists=False)
        for kind, name in args.shared_kinds().items()
        if (kind in MEDIA) == (group == "media")
    }


async def deployments_running(names: list[tuple[str, str]]) -> str | None:
    """None when every named (application, deployment) has a running replica, else what is still missing."""
    status = await asyncio.to_thread(serve.status)
    waiting = []
    for app_name, name in names:
        app = status.applications.get(app_name)
        if app is None:
            return f"application {app_name!r} is not deployed yet"
        if name not in app.deployments:
            waiting.append(f"{name} (not created)")
        elif not cast(dict[str, int], app.deployments[name].replica_states).get("RUNNING"):
            waiting.append(f"{name} ({app.deployments[name].status})")
    return f"waiting for {', '.join(waiting)}" if waiting else None
