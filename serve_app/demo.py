"""GET /demo, the operators' page (static files shipped in the package: no build step, nothing from a CDN), and
GET /api/v1/metrics/summary, the live numbers it polls (serve_app/metrics_summary.py)."""
from __future__ import annotations

import asyncio
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from engine.errors import Starting
from protocol.metrics import MetricsSummary
from serve_app.openapi_docs import errors

PAGE_DIR = Path(__file__).resolve().parent / "demo_page"
MEDIA_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
# a page served by the app it shows: always the files of this deployment, never a cached older one
NO_CACHE = {"Cache-Control": "no-cache"}


def demo_router() -> APIRouter:
    files = {p.name: (p.read_bytes(), MEDIA_TYPES[p.suffix]) for p in sorted(PAGE_DIR.iterdir()) if p.suffix in MEDIA_TYPES}
    router = APIRouter()

    def file(name: str) -> Response:
        if name not in files:
            raise StarletteHTTPException(404, f"No file {name!r} in the demo page.")
        body, media_type = files[name]
        return Response(body, media_type=media_type, headers=NO_CACHE)

    @router.get("/demo", include_in_schema=False)
    async def page() -> Response:
        return file("index.html")

    @router.get("/demo/{name}", include_in_schema=False)
    async def asset(name: str) -> Response:
        return file(name)

    @router.get("/api/v1/metrics/summary", response_model=MetricsSummary, responses=errors(503))
    async def metrics_summary(request: Request) -> Response:
        """Turns/s, p50/p99, sheds and degradations over the last seconds (`window_s`), summed over every orchestrator
        replica of the run (`scope`); the same counts as the Prometheus listener's."""
        serving = getattr(request.app.state, "serving", None)
        if serving is None:
            raise Starting("The service is still starting.")
        summary = await asyncio.to_thread(serving.metrics.live.summary)  # the multiprocess read is file I/O
        return Response(summary.model_dump_json(), media_type="application/json", headers={"Cache-Control": "no-store"})

    return router
