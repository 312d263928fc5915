"""The shipped packs with their models built (real models, built once per session: a no-op when up to date)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from config.settings import Settings, load_settings
from engine.pack import Pack, find_pack, load_pack

ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIR = ROOT / "config"
STATE_DIR = Path(os.environ.get("BATON_STATE_DIR") or ROOT / "var").resolve()


def settings_for(pack: str) -> Settings:
    return load_settings(CONFIG_DIR, {"BATON_PACK": pack, "BATON_STATE_DIR": str(STATE_DIR)})


def built_pack(pack_name: str) -> tuple[Pack, Settings]:
    """A shipped pack and its settings, its models built (a no-op when the fingerprint matches)."""
    from models.build import build

    settings = settings_for(pack_name)
    pack = load_pack(find_pack(pack_name, shipped_dir=settings.packs_dir, state_dir=settings.state_dir))
    build(pack, settings)
    return pack, settings


@pytest.fixture(scope="session")
def cockpit() -> tuple[Pack, Settings]:
    """(pack, settings) for the cockpit pack with built models."""
    return built_pack("cockpit")


@pytest.fixture(scope="session")
def timeflow() -> tuple[Pack, Settings]:
    return built_pack("timeflow")


@pytest.fixture(scope="module")
def module_dir(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A temporary folder for one test module's model copies (hundreds of MB each), removed when the module ends:
    the suite holds one module's copies at a time, not every module's until the session ends."""
    path = tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1])
    yield path
    shutil.rmtree(path, ignore_errors=True)


def untimed(settings: Settings, factor: float = 10.0) -> Settings:
    """`settings` with every latency budget `factor` times longer, for quality tests of the in-process engine: they
    check what the models and rules decide, and a stage that misses its budget while the rest of the suite loads the
    machine (a served app, a browser) would answer degraded instead. Speed is measured by the benchmarks."""
    budgets = settings.budgets
    scaled = budgets.model_copy(
        update={
            "turn_ms": {k: v * factor for k, v in budgets.turn_ms.items()},
            "stages_ms": {k: v * factor for k, v in budgets.stages_ms.items()},
        }
    )
    return settings.model_copy(update={"budgets": scaled})
