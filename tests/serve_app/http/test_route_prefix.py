"""An app served under a route prefix (one cluster serving both packs: `/cockpit`, `/timeflow`): Serve mounts it at
that root_path and leaves the path whole; the routes, the middleware's path checks and the demo page all work there,
and the page offers the cluster's packs."""

from __future__ import annotations

import httpx

from serve_app.http.limits import UPLOAD_PATHS
from serve_app.http.middleware import TURN_PATHS, route_path
from tests.support.fakes import Rig, api_for

PACKS = {"cockpit": "/cockpit", "timeflow": "/timeflow"}


def test_the_middleware_matches_the_path_inside_the_prefix():
    for path in (*TURN_PATHS, *UPLOAD_PATHS):
        assert route_path({"path": f"/timeflow{path}", "root_path": "/timeflow"}) == path
        assert route_path({"path": path, "root_path": ""}) == path
    assert route_path({"path": "/api/v1/agent/chat"}) == "/api/v1/agent/chat"


def client_at(pack: str, prefix: str, **parts) -> httpx.AsyncClient:
    api = api_for(Rig(pack).engine, **parts)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=api, root_path=prefix), base_url="http://localhost")


async def test_an_app_under_its_prefix_answers_there_and_its_page_offers_every_pack_of_the_cluster():
    async with client_at("timeflow", "/timeflow", assistants=PACKS) as client:
        assert (await client.get("/timeflow/health")).json()["pack"] == "timeflow"
        turn = await client.post("/timeflow/api/v1/agent/chat", json={"user_id": "u", "text": "你好"})
        assert turn.status_code == 200, turn.text
        page = await client.get("/timeflow/demo")
        # relative to the page, so the same files work at /demo and under a prefix
        assert page.status_code == 200 and 'src="demo/app.js"' in page.text and 'src="/' not in page.text
        assert (await client.get("/timeflow/demo/app.js")).status_code == 200
        chooser = (await client.get("/timeflow/demo/assistants")).json()
        assert chooser == {"current": "timeflow", "assistants": PACKS}


async def test_a_pack_served_alone_offers_only_itself():
    async with client_at("cockpit", "") as client:
        chooser = (await client.get("/demo/assistants")).json()
    assert chooser == {"current": "cockpit", "assistants": {"cockpit": ""}}
