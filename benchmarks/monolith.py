"""`python -m benchmarks.monolith`: the baseline — the same engine and HTTP API with in-process models, one uvicorn process.

The seed-003 architecture given a fair shake: the models run in a thread pool (one worker per model, as
Baton runs one replica per model), torch uses the same per-model thread count, and the routes, admission
control and error envelope are Baton's own (`serve_app.http_api`).
"""
from __future__ import annotations

import argparse
import os
from pathlib import Path

import uvicorn
from fastapi import FastAPI

ROOT = Path(__file__).resolve().parent.parent
MODEL_WORKERS = 3  # classifier, detector, retriever: the monolith's counterpart of one replica each


def build_api(config_dir: Path) -> FastAPI:
    from deployments.in_process import InProcessModels
    from engine.pack import find_pack, load_pack
    from engine.plugins import PluginRegistry
    from engine.session import InMemorySessionStore
    from engine.settings import load_settings
    from engine.turn import TurnEngine
    from serve_app.admission import Admission
    from serve_app.http_api import Serving, create_api
    from serve_app.metrics import TurnMetrics

    settings = load_settings(config_dir, os.environ)
    pack = load_pack(find_pack(settings.pack, shipped_dir=settings.packs_dir, state_dir=settings.state_dir))
    models = InProcessModels(settings, workers=MODEL_WORKERS)
    for model in (models.classifier, models.detector, models.retriever):
        model.warmup()
    engine = TurnEngine(pack=pack, settings=settings, models=models,
                        sessions=InMemorySessionStore(settings.session.ttl_s), plugins=PluginRegistry())
    api = create_api()
    api.state.serving = Serving(engine=engine, admission=Admission(settings.serving.max_in_flight_turns),
                                metrics=TurnMetrics(), retry_after_s=settings.serving.retry_after_s)
    return api


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.monolith", description=__doc__.splitlines()[0])
    parser.add_argument("--config-dir", type=Path, default=ROOT / "config")
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args(argv)
    api = build_api(args.config_dir.resolve())
    uvicorn.run(api, host="127.0.0.1", port=args.port, access_log=False, log_level="warning")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
