"""Every tier: the environment the packaged models need, a marker per tier from what a test uses, and the fixtures
several tiers share (the shipped packs built once, PostgreSQL, the served app). Each tier's own fixtures live in its
conftest."""

from __future__ import annotations

import os

import pytest

for name, value in {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",
}.items():
    os.environ.setdefault(name, value)

from tests.support.database import postgres  # noqa: E402,F401 — fixtures
from tests.support.packs import cockpit, module_dir, timeflow  # noqa: E402,F401
from tests.support.served import serve_app, served, switch_pack  # noqa: E402,F401

# the tier a fixture or a folder puts a test in (`make test-fast` runs those without `ray`); a test that asks for a
# fixture by name at run time says its tier with a marker of its own
TIER_OF_FIXTURE = {
    "served": "ray",
    "serve_app": "ray",
    "switch_pack": "ray",
    "both_packs": "ray",
    "browser": "browser",
    "postgres": "store",
    "db": "store",
    "cockpit": "models",
    "timeflow": "models",
}
TIER_OF_FOLDER = {"integration": "ray", "models": "models", "deployments": "models"}


def _last_rank(fixtures: tuple[str, ...]) -> int:
    return 2 if "switch_pack" in fixtures else 1 if "both_packs" in fixtures else 0


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # the modules that switch the session's app to another pack run last, wherever they sit: every module before them
    # finds the cockpit pack already served (each switch is a redeploy: minutes here); just before them the module
    # that serves both packs in one cluster (`both_packs`: a second app beside the session's, which it leaves as is)
    items.sort(key=lambda item: _last_rank(getattr(item, "fixturenames", ())))
    for item in items:
        folder = item.path.relative_to(item.config.rootpath / "tests").parts[0]
        tiers = {TIER_OF_FIXTURE[f] for f in set(getattr(item, "fixturenames", ())) & TIER_OF_FIXTURE.keys()}
        for tier in tiers | ({TIER_OF_FOLDER[folder]} if folder in TIER_OF_FOLDER else set()):
            item.add_marker(tier)
