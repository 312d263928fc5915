"""The folds' choice recorded beside a pack's source (`selection.json`).

On a tuned pack the folds are most of the build (four encoder tunes before the one that serves), and what they
choose is a function of the build's inputs: the rows, the settings, the encoder and the code (seeded folds). The
record keeps the choice and its report under the key of those inputs (`models.fingerprints.selection_key`); a build
whose key matches takes the recorded choice instead of running the folds, and any other build runs them and says the
record is stale. `python -m models.build --pack P --record-selection` (`make models PACK=P RESELECT=1`) runs the folds
and writes the record; commit it with the change that made it stale."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RECORD = "selection.json"


@dataclass(frozen=True)
class Recorded:
    """A recorded choice: the settings the folds chose and their report, as a build's manifest keeps them."""

    selected: dict[str, Any]
    report: dict[str, Any]


def read(source: Path | None, key: str) -> Recorded | None:
    """The choice recorded in the pack folder `source` under `key`; None when there is none, or it is stale (said)."""
    path = source / RECORD if source else None
    if path is None or not path.exists():
        return None
    record = json.loads(path.read_text(encoding="utf-8"))
    if record.get("key") != key:
        print(f"{path} was recorded for other rows, settings or code: the folds run (refresh it: --record-selection)")
        return None
    return Recorded(selected=record["selected"], report=record["report"])


def write(source: Path, key: str, manifest: dict[str, Any]) -> Path:
    """Record the choice a build's folds made (its manifest) in the pack folder `source`."""
    if not manifest.get("selected") or manifest.get("selection_from") != "folds":
        raise SystemExit("this build chose nothing on folds: there is no choice to record")
    path = source / RECORD
    record = {"key": key, "selected": manifest["selected"], "report": manifest["selection_report"]}
    path.write_text(json.dumps(record, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    return path
