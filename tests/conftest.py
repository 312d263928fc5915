"""Shared fixtures: settings, built packs (real models, built once), and the real Serve app started once per session."""
from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
# the engine's test doubles (fakes.py) serve the serving layer's tests too
sys.path.insert(0, str(ROOT / "tests" / "engine"))
CONFIG_DIR = ROOT / "config"
STATE_DIR = Path(os.environ.get("BATON_STATE_DIR") or ROOT / "var").resolve()

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def settings_for(pack: str):
    from engine.settings import load_settings

    return load_settings(CONFIG_DIR, {"BATON_PACK": pack, "BATON_STATE_DIR": str(STATE_DIR)})


def built_pack(pack_name: str):
    """Load a shipped pack and make sure its models are built (a no-op when the fingerprint matches)."""
    from engine.pack import find_pack, load_pack
    from models.build import build

    settings = settings_for(pack_name)
    pack = load_pack(find_pack(pack_name, shipped_dir=settings.packs_dir, state_dir=settings.state_dir))
    build(pack, settings)
    return pack, settings


@pytest.fixture(scope="session")
def cockpit():
    """(pack, settings) for the cockpit pack with built models."""
    return built_pack("cockpit")


@pytest.fixture(scope="session")
def timeflow():
    return built_pack("timeflow")


@pytest.fixture(scope="module")
def module_dir(tmp_path_factory, request):
    """A temporary folder for one test module's model copies (hundreds of MB each), removed when the module ends:
    the suite holds one module's copies at a time, not every module's until the session ends."""
    path = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres():
    """A real PostgreSQL for the whole session: DATABASE_URL when set, else an embedded server in a temp folder.

    Yields {"dsn", "server"}; "server" is the EmbeddedPostgres (None for an external URL) so a test can restart it.
    """
    if os.environ.get("DATABASE_URL"):
        yield {"dsn": os.environ["DATABASE_URL"], "server": None}
        return
    from store.embedded import EmbeddedPostgres

    # not under pytest's 0700 temp root: the server runs as its own system user and must reach the folder
    folder = Path(tempfile.mkdtemp(prefix="baton-pg-"))
    server = EmbeddedPostgres(folder / "pgdata")
    dsn = server.start()
    try:
        yield {"dsn": dsn, "server": server}
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
async def db(postgres, cockpit):
    """An asyncpg pool on the session's PostgreSQL with the schema migrated, closed after the test."""
    from store.database import Database

    _, settings = cockpit
    database = await Database.open(postgres["dsn"], settings.store)
    try:
        yield database
    finally:
        await database.close()


ORCHESTRATOR_REPLICAS = 2  # the integration tests run one conversation across two orchestrator replicas


@pytest.fixture(scope="session")
def serve_app(cockpit, postgres):
    """The real Baton app on Ray Serve (cockpit pack), deployed once per test session.

    Yields its base URL, config and ports, and `first_turns`: the first text and image turns sent the moment
    /health turned green (the readiness test checks them)."""
    from serve_app import launcher

    port, metrics_port = launcher.free_ports(2)
    env = {**os.environ, "BATON_STATE_DIR": str(STATE_DIR), "BATON_PACK": "cockpit", "BATON_METRICS_PORT": str(metrics_port),
           "DATABASE_URL": postgres["dsn"]}
    config = launcher.load_serve_config(CONFIG_DIR / "serve_local.yaml", env, port=port)
    for deployment in config["applications"][0]["deployments"]:
        if deployment["name"] == "Orchestrator":
            deployment["autoscaling_config"]["min_replicas"] = ORCHESTRATOR_REPLICAS
    # the tests escalate to the LLM on purpose, one after another, and a base model on this CPU mostly runs out of
    # time: the hold (llm.hold_after_timeouts, tested in tests/engine) would answer the later ones without asking it
    config["applications"][0]["args"].setdefault("overrides", {}).setdefault("llm", {})["hold_after_timeouts"] = 0
    try:
        launcher.start(config, env)
        # the Planner loads vLLM and warms its grammar beside the other replicas: minutes on a busy 2-core machine
        launcher.wait_until_healthy(port, timeout_s=600, replicas=ORCHESTRATOR_REPLICAS)
        url = f"http://127.0.0.1:{port}"
        yield {"url": url, "config": config, "metrics_port": metrics_port, "first_turns": first_turns(url)}
    finally:
        launcher.stop(port)


def _deploy_pack(serve_app, pack: str) -> None:
    import copy
    import time

    import httpx

    from serve_app import launcher

    config = copy.deepcopy(serve_app["config"])
    config["applications"][0]["args"]["pack"] = pack
    launcher.start(config)
    port = config["http_options"]["port"]
    # the old pack keeps answering until the new replicas are up: wait for the new one by name
    deadline = time.time() + 300
    while time.time() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=2).json().get("pack") == pack:
                break
        except httpx.HTTPError:
            pass
        time.sleep(1)
    launcher.wait_until_healthy(port, timeout_s=180, replicas=ORCHESTRATOR_REPLICAS)


@pytest.fixture(scope="session")
def switch_pack(serve_app):
    """Redeploy the session's app with another pack (`switch(pack)` -> an httpx client on it). The modules using
    it run last (RUN_LAST below), so the cockpit pack is not deployed again after them."""
    import httpx

    current: list[str] = []

    def switch(pack: str) -> httpx.Client:
        if current[-1:] != [pack]:
            _deploy_pack(serve_app, pack)
            current.append(pack)
        return httpx.Client(base_url=serve_app["url"], timeout=10.0)

    return switch


def until_fault_shows(send, shows, timeout_s: float = 30.0) -> tuple[dict, float]:
    """Send turns (`send()` -> the response body) until `shows(body)`: the faults file reaches the replicas within a
    fraction of a second. Returns the last body and its client wall time in ms."""
    import time

    deadline = time.time() + timeout_s
    while True:
        t0 = time.perf_counter()
        body = send()
        wall_ms = (time.perf_counter() - t0) * 1000
        if shows(body) or time.time() > deadline:
            return body, wall_ms
        time.sleep(0.3)


def first_turns(url: str) -> dict[str, dict]:
    """A text turn and an image turn (a photo of a command, uploaded first), as a user would send them."""
    import httpx

    from benchmarks.media_samples import available_fonts, render_text

    with httpx.Client(base_url=url, timeout=30.0) as client:
        text = client.post("/api/v1/agent/chat", json={"user_id": "first-user", "text": "帮我把车窗打开"})
        png = render_text("把空调调到二十二度", font=available_fonts()[0], size=36)
        media = client.post("/api/v1/media/upload", data={"file_type": "image", "user_id": "first-user"},
                            files={"file": ("command.png", png)}).json()
        image = client.post("/api/v1/agent/chat", json={"user_id": "first-user", "modality": "image_ocr",
                                                        "source_url": media["source_url"]})
    return {"text": {"status_code": text.status_code, **text.json()}, "image": {"status_code": image.status_code, **image.json()}}


# Debian's Chromium (Makefile SYSTEM_PACKAGES), never a browser Playwright would download
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def chromium_args() -> list[str]:
    """Launch flags on top of CHROMIUM_ARGS; a module overrides this fixture to add its own."""
    return []


@pytest.fixture(scope="module")
def browser(chromium_args):
    """Headless Chromium driven by Playwright, one per module."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *chromium_args])
        try:
            yield chromium
        finally:
            chromium.close()


# Redeploy the session's app with other packs: they run last (the timeflow conversation and the demo page on it first,
# then the pack switch, which starts on timeflow too), so no test after them needs the cockpit pack back.
RUN_LAST = frozenset({"test_conversation_timeflow", "test_demo_page_timeflow", "test_pack_switch"})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items.sort(key=lambda item: getattr(item.module, "__name__", "").rpartition(".")[2] in RUN_LAST)
