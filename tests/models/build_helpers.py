"""Helpers for the build tests."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIR = ROOT / "config"
# the tests' packs from rows build with a short tune (`--serve-config` of `python -m models.build`)
SHORT_TUNE = ROOT / "tests" / "data" / "short_tune.yaml"


def tmp_state(state_dir: Path, encoder: Path) -> Path:
    """A fresh BATON_STATE_DIR whose default encoder folder is a link to the already bootstrapped one
    (no re-bootstrap)."""
    (state_dir / "encoder").mkdir(parents=True, exist_ok=True)
    link = state_dir / "encoder" / "multilingual-e5-small"
    if not link.exists():
        link.symlink_to(Path(encoder).resolve(), target_is_directory=True)
    return state_dir


def settings_in(state_dir: Path, pack: str):
    """The settings of a test's pack in `state_dir`, with the short tune the tests build with."""
    from config.settings import load_settings
    from models.build import serve_overrides

    return load_settings(
        CONFIG_DIR, {"BATON_PACK": pack, "BATON_STATE_DIR": str(state_dir)}, serve_overrides(SHORT_TUNE)
    )


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def run_module(args: list[str], *, state_dir: Path | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    if state_dir is not None:
        env["BATON_STATE_DIR"] = str(state_dir)
    env.pop("BATON_PACK", None)
    return subprocess.run(
        [sys.executable, "-m", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
    )
