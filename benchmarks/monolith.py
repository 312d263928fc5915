"""`python -m benchmarks.monolith`: the baseline — the same engine and HTTP API with in-process models, one uvicorn process.

The seed-003 architecture given a fair shake: one unbatched in-process pass per turn through the same
models (one encoder pass, the three heads on its vectors) on a worker thread, with the same runtime and
thread count as Baton's model replica, and the routes, admission control, error envelope and PostgreSQL
store (sessions leased per turn, every turn logged) are Baton's own (`serve_app.http_api`,
`serve_app.stored_chat`). Without DATABASE_URL it uses (or starts) the embedded server under the state dir,
as `make run` does.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

import uvicorn
from fastapi import FastAPI

ROOT = Path(__file__).resolve().parent.parent
MODEL_WORKERS = 1  # one pass at a time, as one model replica would run them unbatched


def build_api(config_dir: Path, dsn: str) -> FastAPI:
    from deployments.in_process import InProcessModels
    from deployments.nlu import build_nlu
    from engine.pack import find_pack, load_pack
    from engine.plugins import PluginRegistry
    from engine.session import InMemorySessionStore
    from engine.settings import load_settings
    from engine.turn import TurnEngine
    from models.artifacts import served_settings
    from serve_app.admission import Admission
    from serve_app.http_api import Serving, create_api
    from serve_app.auth import Auth, signing_secret
    from serve_app.metrics import TurnMetrics
    from serve_app.store_lifespan import open_store_on_start

    settings = served_settings(load_settings(config_dir, os.environ))
    pack = load_pack(find_pack(settings.pack, shipped_dir=settings.packs_dir, state_dir=settings.state_dir))
    models = InProcessModels(build_nlu(settings), workers=MODEL_WORKERS)  # built warm
    engine = TurnEngine(pack=pack, settings=settings, models=models,
                        sessions=InMemorySessionStore(settings.session.ttl_s), plugins=PluginRegistry())
    api = create_api()
    api.state.serving = Serving(engine=engine, admission=Admission(settings.serving.admission),
                                metrics=TurnMetrics(), retry_after_s=settings.serving.retry_after_s)

    open_store_on_start(api, dsn, settings, Auth(settings.auth, signing_secret(settings.auth, settings.state_dir, os.environ)))
    return api


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.monolith", description=__doc__.splitlines()[0])
    parser.add_argument("--config-dir", type=Path, default=ROOT / "config")
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args(argv)
    from engine.settings import load_settings
    from serve_app.heap import freeze_startup_heap
    from store.embedded import EmbeddedPostgres

    database = None
    dsn = os.environ.get("DATABASE_URL")
    if not dsn:
        database = EmbeddedPostgres(load_settings(args.config_dir.resolve(), os.environ).state_dir / "pgdata")
        dsn = database.start()
    # uvicorn re-raises the SIGTERM it handled once it has shut down; exiting through this handler instead
    # lets the embedded database below be stopped
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(0))
    try:
        api = build_api(args.config_dir.resolve(), dsn)
        freeze_startup_heap()  # as Baton's replicas do after their warm-up (serve_app/heap.py)
        uvicorn.run(api, host="127.0.0.1", port=args.port, access_log=False, log_level="warning")
    finally:
        if database is not None:
            database.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
