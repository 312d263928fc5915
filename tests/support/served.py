"""The real Baton app on Ray Serve with PostgreSQL, started once per test session with its calendar clock pinned,
shared by every tier that drives it (integration, security).

A module that needs another pack says so (`switch_pack`); `serve_app` puts the cockpit pack back when a module before
it switched, so no module depends on the order the modules run in (tests/conftest.py runs the modules that switch
last, which only saves redeploys)."""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from serve_app.ops import launcher
from tests.support.packs import CONFIG_DIR, STATE_DIR
from tests.support.serving import PINNED_NOW, first_turns

ORCHESTRATOR_REPLICAS = 2  # the integration tests run one conversation across two orchestrator replicas


class ServedApp:
    """The session's app: its URL, config and ports, and which pack it serves now."""

    def __init__(self, config: dict[str, Any], port: int, metrics_port: int) -> None:
        self.config, self.port, self.metrics_port = config, port, metrics_port
        self.url = f"http://127.0.0.1:{port}"
        self.pack = "cockpit"
        self.first_turns: dict[str, dict[str, Any]] = {}

    def serve(self, pack: str) -> None:
        """Redeploy with `pack` (the same process; only the replicas restart) and wait until it answers as that pack."""
        if pack == self.pack:
            return
        config = copy.deepcopy(self.config)
        config["applications"][0]["args"]["pack"] = pack
        launcher.start(config)
        deadline = time.time() + 300  # the old pack keeps answering until the new replicas are up
        while time.time() < deadline:
            try:
                if httpx.get(f"{self.url}/health", timeout=2).json().get("pack") == pack:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(1)
        launcher.wait_until_healthy(self.port, timeout_s=180, replicas=ORCHESTRATOR_REPLICAS)
        self.pack = pack


@pytest.fixture(scope="session")
def served(cockpit: Any, postgres: dict[str, Any]) -> Iterator[ServedApp]:
    port, metrics_port = launcher.free_ports(2)
    env = {
        **os.environ,
        "BATON_STATE_DIR": str(STATE_DIR),
        "BATON_PACK": "cockpit",
        "BATON_METRICS_PORT": str(metrics_port),
        "DATABASE_URL": postgres["dsn"],
    }
    config = launcher.load_serve_config(CONFIG_DIR / "serve_local.yaml", env, port=port)
    app = config["applications"][0]
    for deployment in app["deployments"]:
        if deployment["name"] == "Orchestrator":
            deployment["autoscaling_config"]["min_replicas"] = ORCHESTRATOR_REPLICAS
    overrides = app["args"].setdefault("overrides", {})
    # the tests escalate to the LLM on purpose, one after another, and a base model on this CPU mostly runs out of
    # time: the hold (llm.hold_after_timeouts, tested in tests/engine) would answer the later ones without asking it
    overrides.setdefault("llm", {})["hold_after_timeouts"] = 0
    overrides["testing"] = {"now": PINNED_NOW.isoformat()}  # relative dates read the same on any day, at any hour
    try:
        launcher.start(config, env)
        # the Planner loads vLLM and warms its grammar beside the other replicas: minutes on a busy 2-core machine
        launcher.wait_until_healthy(port, timeout_s=600, replicas=ORCHESTRATOR_REPLICAS)
        served_app = ServedApp(config, port, metrics_port)
        served_app.first_turns = first_turns(served_app.url)
        yield served_app
    finally:
        launcher.stop(port)


@pytest.fixture(scope="module")
def serve_app(served: ServedApp) -> dict[str, Any]:
    """The app serving the cockpit pack: its base URL, config, metrics port, and `first_turns` (the text and image
    turns sent the moment /health turned green; the readiness test checks them)."""
    served.serve("cockpit")
    return {
        "url": served.url,
        "config": served.config,
        "metrics_port": served.metrics_port,
        "first_turns": served.first_turns,
    }


@pytest.fixture(scope="session")
def switch_pack(served: ServedApp) -> Callable[[str], httpx.Client]:
    """`switch(pack)`: the session's app serving `pack`, and an httpx client on it."""

    def switch(pack: str) -> httpx.Client:
        served.serve(pack)
        return httpx.Client(base_url=served.url, timeout=10.0)

    return switch
