"""The FastAPI app shared by the Serve ingress and an app served by a plain ASGI server: the routers by feature,
the one mapping of errors to the wire, the middleware. The app state is attached to it before it serves."""

from __future__ import annotations

from fastapi import FastAPI

from serve_app import errors
from serve_app.apidocs import openapi
from serve_app.http import account, calendar_feeds, calendar_sources, chat, demo, media, rest
from serve_app.http.limits import BodyLimits
from serve_app.http.middleware import AdmissionGate, ArrivalStamp, BrowserGuard, ReplicaName
from serve_app.http.openai import api_router as openai
from serve_app.ws import router as ws


def create_api(*, replica: str | None = None) -> FastAPI:
    """`replica` names the replica in every response's `REPLICA_HEADER`."""
    api = FastAPI(title="Baton", version="0.1.0")
    openapi.install(api)
    routers = (media.router, chat.router, rest.router, account.router, ws.router, openai.router, demo.router)
    for router in (*routers, calendar_feeds.router, calendar_sources.router):
        api.include_router(router)
    errors.install(api)
    if replica is not None:
        api.add_middleware(ReplicaName, name=replica)
    api.add_middleware(BodyLimits)  # inside the gate: a shed turn costs no body read
    api.add_middleware(AdmissionGate)
    api.add_middleware(BrowserGuard)  # a page of another site is refused before anything else runs
    api.add_middleware(ArrivalStamp)  # added last: outermost, so the stamp is the first thing a request meets
    return api
