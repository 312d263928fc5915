"""`python -m benchmarks.monolith`: the baseline — the same engine and HTTP API, models in-process, one uvicorn process.

The seed-003 architecture given a fair shake: one unbatched in-process pass per turn through the same
models (one encoder pass, the three heads on its vectors) on a worker thread, with the same runtime and
thread count as Baton's model replica, and the routes, admission control, error envelope and PostgreSQL
store (sessions leased per turn, every turn logged) are Baton's own (`serve_app.http.api`,
`serve_app.turns.stored`). Without DATABASE_URL it uses (or starts) the embedded server under the state dir,
as `make run` does.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

import uvicorn
from fastapi import FastAPI

ROOT = Path(__file__).resolve().parent.parent
MODEL_WORKERS = 1  # one pass at a time, as one model replica would run them unbatched


def build_api(config_dir: Path, dsn: str) -> FastAPI:
    from config.settings import load_settings
    from deployments.artifacts import served_settings
    from deployments.in_process import InProcessModels
    from deployments.nlu import build_nlu
    from serve_app.http.api import create_api
    from serve_app.state import ModelClients, build_state, on_start

    settings = served_settings(load_settings(config_dir))
    models = ModelClients(nlu=InProcessModels(build_nlu(settings), workers=MODEL_WORKERS))  # built warm
    api = create_api()
    on_start(api, lambda db: build_state(settings, models, db), dsn, settings)
    return api


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.monolith", description=__doc__.splitlines()[0])
    parser.add_argument("--config-dir", type=Path, default=ROOT / "config")
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args(argv)
    from config.settings import load_settings
    from serve_app.replicas.heap import freeze_startup_heap
    from store.embedded import EmbeddedPostgres

    settings = load_settings(args.config_dir.resolve())
    database = None
    dsn = settings.env.database_url.get_secret_value() if settings.env.database_url else None
    if not dsn:
        database = EmbeddedPostgres(settings.state_dir / "pgdata")
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
