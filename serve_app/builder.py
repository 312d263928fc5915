"""The one app builder: binds every deployment; the Serve YAML's import_path points here."""
from __future__ import annotations

from ray import serve
from ray.serve import Application

from serve_app.app_args import INGRESS, AppArgs
from serve_app.ingress import Orchestrator
from serve_app.replica import ModelReplica


def build_app(args: AppArgs | dict) -> Application:
    """Build the Baton application.

    Every model deployment is a `ModelReplica` of one kind: in the `fused` layout one NLU deployment (the
    encoder and the three heads in each replica), in `split` an Encoder deployment and IntentClassifier,
    MultiIntentDetector and EmbeddingRetriever deployments; ASR and OCR in both. The Orchestrator ingress
    receives their handles. Replica counts, autoscaling, queue limits, CPU shares and fault `user_config`
    come from the Serve config (`config/serve_local.yaml`), matched by deployment name.
    """
    args = AppArgs.model_validate(args) if isinstance(args, dict) else args
    plain = args.model_dump(exclude={"deployment_options"})

    def bind(cls, name: str, *init_args):
        return serve.deployment(cls, name=name, **args.deployment_options.get(name, {})).bind(*init_args)

    bound = {kind: bind(ModelReplica, name, kind, plain) for kind, name in args.model_kinds().items()}
    media = {k: bound.pop(k) for k in ("asr", "ocr") if k in bound}
    return bind(Orchestrator, INGRESS, bound, media, plain)
