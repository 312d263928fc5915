"""The one app builder: binds every deployment; the Serve YAML's import_path points here."""

from __future__ import annotations

from typing import Any

from ray import serve
from ray.serve import Application

from serve_app.args import INGRESS, PLANNER, AppArgs
from serve_app.replicas.model import ModelReplica
from serve_app.replicas.orchestrator import Orchestrator


def build_app(args: AppArgs | dict) -> Application:
    """Build the Baton application.

    Every model deployment is a `ModelReplica` of one kind: in the `fused` layout one NLU deployment (the
    encoder and the three heads in each replica), in `split` an Encoder deployment and IntentClassifier,
    MultiIntentDetector and EmbeddingRetriever deployments; ASR and OCR in both. The language model is the
    Planner deployment (`planner: vllm`) or Ray Serve LLM's LLMServer (`planner: serve_llm`), named Planner too.
    The Orchestrator ingress receives their handles. An app with `shared_from` deploys no ASR, OCR or Planner: its
    Orchestrator calls that application's (one cluster serving several packs: serve_app.ops.apps). Replica counts,
    autoscaling, queue limits, CPU/GPU shares, runtime environments and fault `user_config` come from the Serve
    config, matched by deployment name.
    """
    args = AppArgs.model_validate(args) if isinstance(args, dict) else args
    plain = args.model_dump(exclude={"deployment_options"})

    def bind(cls: type, name: str, *init_args: Any) -> Application:
        deployment: Any = serve.deployment(cls, name=name, **args.deployment_options.get(name, {}))
        return deployment.bind(*init_args)

    bound = {kind: bind(ModelReplica, name, kind, plain) for kind, name in args.model_kinds().items()}
    media = {k: bound.pop(k) for k in ("asr", "ocr") if k in bound}
    own_planner = args.shared_from is None  # else the Orchestrator calls the sharing app's Planner
    if own_planner and args.planner == "vllm":
        from serve_app.replicas.planner import Planner  # runs in the LLM venv: imported only when deployed

        bound["planner"] = bind(Planner, PLANNER, planner_options(args))
    elif own_planner and args.planner == "serve_llm":
        from serve_app.replicas.serve_llm import serve_llm_deployment

        bound["planner"] = serve_llm_deployment(args.llm_config, args.deployment_options.get(PLANNER, {}))
    return bind(serve.ingress()(Orchestrator), INGRESS, bound, media, plain)


def planner_options(args: AppArgs) -> dict[str, Any]:
    """The Planner deployment's engine options (plain data: its replica runs in another venv)."""
    settings = args.settings()
    llm = settings.llm
    return {
        "model_path": str(settings.llm_path.resolve()),
        "threads": llm.threads,
        "kv_cache_gib": llm.kv_cache_gib,
        "max_model_len": llm.max_model_len,
        "block_size": llm.block_size,
        "enforce_eager": llm.enforce_eager,
        "dtype": llm.dtype,
        "faults": settings.env.faults,
        "faults_file": str(settings.env.faults_file or ""),
    }
