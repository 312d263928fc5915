"""The one app builder: binds every deployment; the Serve YAML's import_path points here."""
from __future__ import annotations

from ray import serve
from ray.serve import Application

from serve_app.app_args import AppArgs
from serve_app.ingress import Orchestrator
from serve_app.media_server import MediaServer
from serve_app.model_server import ModelServer

MODEL_DEPLOYMENTS = {"classifier": "IntentClassifier", "detector": "MultiIntentDetector", "retriever": "EmbeddingRetriever"}
MEDIA_DEPLOYMENTS = {"asr": "ASR", "ocr": "OCR"}


def build_app(args: AppArgs | dict) -> Application:
    """Build the Baton application.

    Each model stage is a `ModelServer` deployment named as in `MODEL_DEPLOYMENTS`; the Orchestrator
    ingress receives their handles, and those of the `MediaServer` deployments in `MEDIA_DEPLOYMENTS`
    (ASR, OCR). Replica counts, autoscaling, queue limits, CPU shares and fault `user_config` come
    from the Serve config (`config/serve_local.yaml`), matched by deployment name.
    """
    args = AppArgs.model_validate(args).model_dump() if isinstance(args, dict) else args.model_dump()
    handles = {
        stage: serve.deployment(ModelServer, name=name).bind(stage, args)
        for stage, name in MODEL_DEPLOYMENTS.items()
    }
    media = {stage: serve.deployment(MediaServer, name=name).bind(stage, args) for stage, name in MEDIA_DEPLOYMENTS.items()}
    return serve.deployment(Orchestrator, name="Orchestrator").bind(handles["classifier"], handles["detector"], handles["retriever"], args,
                                                                     asr=media["asr"], ocr=media["ocr"])
