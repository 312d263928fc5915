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
from tests.support.serving import PINNED_NOW, first_turns, until_fault_shows

ORCHESTRATOR_REPLICAS = 2  # the integration tests run one conversation across two orchestrator replicas
# The app starts with a stage slower than its budget, the documented way to see degradation: it must still turn green
# within the start timeout (saying it runs degraded) and answer turns inside their budget; tests/security checks the
# record (`slow_start`). The fault is cleared before anything else runs.
SLOW_START_FAULT = "classifier:delay_ms=800"
START_TIMEOUT_S = 600.0  # the Planner loads vLLM and warms its grammar beside the other replicas: minutes here


class ServedApp:
    """The session's app: its URL, config and ports, and which pack it serves now."""

    def __init__(self, config: dict[str, Any], port: int, metrics_port: int) -> None:
        self.config, self.port, self.metrics_port = config, port, metrics_port
        self.url = f"http://127.0.0.1:{port}"
        self.pack = "cockpit"
        self.first_turns: dict[str, dict[str, Any]] = {}
        self.slow_start: dict[str, Any] = {}

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
    # the launcher hands Ray's processes their variables through this process's environment; after the app stops
    # (or failed to start) they would point later tests at its removed run folder
    saved_env = dict(os.environ)
    try:
        launcher.start(config, env)
        launcher.set_faults(config, SLOW_START_FAULT)  # before any replica is up: they all start with it
        served_app = ServedApp(config, port, metrics_port)
        served_app.slow_start = slow_start(served_app)
        launcher.set_faults(config, "")
        until_fault_shows(lambda: text_turn(served_app.url), lambda body: "classifier" not in degraded_in(body))
        until_health_is_plain(served_app.url)
        served_app.first_turns = first_turns(served_app.url)
        yield served_app
    finally:
        launcher.stop(port)
        os.environ.clear()
        os.environ.update(saved_env)


def slow_start(app: ServedApp) -> dict[str, Any]:
    """Start-up under SLOW_START_FAULT: how long /health took to turn green, its body, and a text turn sent then."""
    t0 = time.monotonic()
    reason = launcher.wait_until_healthy(app.port, timeout_s=START_TIMEOUT_S, replicas=ORCHESTRATOR_REPLICAS)
    green_after_s = time.monotonic() - t0
    health = {**httpx.get(f"{app.url}/health", timeout=10).json(), "reason_when_green": reason}
    t1 = time.perf_counter()
    turn = text_turn(app.url)
    wall_ms = (time.perf_counter() - t1) * 1000
    return {
        "fault": SLOW_START_FAULT,
        "timeout_s": START_TIMEOUT_S,
        "green_after_s": green_after_s,
        "health": health,
        "text": {**turn, "wall_ms": wall_ms},
    }


def until_health_is_plain(url: str, *, timeout_s: float = 60.0, answers: int = 6) -> None:
    """Until `answers` /health bodies in a row say no more than ok (each replica re-probes while degraded)."""
    deadline, plain = time.time() + timeout_s, 0
    while plain < answers and time.time() < deadline:
        plain = plain + 1 if httpx.get(f"{url}/health", timeout=5).json().keys() == {"status", "pack"} else 0
        time.sleep(0.3)


def text_turn(url: str) -> dict[str, Any]:
    response = httpx.post(
        f"{url}/api/v1/agent/chat", json={"user_id": "slow-start", "text": "帮我把车窗打开"}, timeout=30
    )
    return {"status_code": response.status_code, **response.json()}


def degraded_in(body: dict[str, Any]) -> list[str]:
    return list(body.get("timings", {}).get("degraded", []))


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
