"""GET /demo, the operators' page (static files shipped in the package: no build step, nothing from a CDN), and
GET /api/v1/metrics/summary, the live numbers it polls (serve_app/metrics_summary.py)."""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from protocol.metrics import MetricsSummary
from serve_app.apidocs.openapi import errors
from serve_app.http.deps import StateDep

PAGE_DIR = Path(__file__).resolve().parent / "demo_page"
MEDIA_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}
# a page served by the app it shows: always the files of this deployment, never a cached older one
NO_CACHE = {"Cache-Control": "no-cache"}


router = APIRouter()


@functools.cache
def _files() -> dict[str, tuple[bytes, str]]:
    return {
        p.name: (p.read_bytes(), MEDIA_TYPES[p.suffix]) for p in sorted(PAGE_DIR.iterdir()) if p.suffix in MEDIA_TYPES
    }


def _file(name: str) -> Response:
    if name not in _files():
        raise StarletteHTTPException(404, f"No file {name!r} in the demo page.")
    body, media_type = _files()[name]
    return Response(body, media_type=media_type, headers=NO_CACHE)


@router.get("/demo", include_in_schema=False)
async def page() -> Response:
    return _file("index.html")


@router.get("/demo/assistants", include_in_schema=False)
async def assistants(state: StateDep) -> dict[str, object]:
    """The page's chooser: the pack this app serves and every pack of the cluster, pack → route prefix (only this
    one, at the app's own place, when it serves alone)."""
    pack = state.engine.pack.name
    return {"current": pack, "assistants": state.assistants or {pack: ""}}


@router.get("/demo/{name}", include_in_schema=False)
async def asset(name: str) -> Response:
    return _file(name)


@router.get("/api/v1/metrics/summary", response_model=MetricsSummary, responses=errors(503))
async def metrics_summary(state: StateDep) -> Response:
    """Turns/s, p50/p99, sheds and degradations over the last seconds (`window_s`), summed over every orchestrator
    replica of the run (`scope`); the same counts as the Prometheus listener's."""
    summary = await asyncio.to_thread(state.metrics.live.summary)  # the multiprocess read is file I/O
    return Response(summary.model_dump_json(), media_type="application/json", headers={"Cache-Control": "no-store"})
