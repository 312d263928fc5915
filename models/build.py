"""`python -m models.build`: bootstrap the encoder, then tune it and train heads and the index for a pack (or a user's
JSONL rows).

Artifacts land in `$BATON_STATE_DIR/packs/<pack>/models/` (the tuned encoder in its `encoder/`) with a manifest whose
fingerprint covers the rows, the encoder, the tuning and selection settings and the code that shapes the artifacts;
an unchanged fingerprint skips the build.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, cast

import yaml

from config.settings import Settings, load_settings, merged
from deployments import artifacts as layout
from engine.pack import Pack, find_pack, load_pack
from models import selection_record
from models.encoder import bootstrap_encoder
from models.evaluate import confusion_summary, held_out
from models.fingerprints import fingerprint, selection_key
from models.pack_models import train_models

MIN_ROWS_PER_INTENT = 2


def rows_to_pack(rows_path: Path, name: str, settings: Settings) -> Path:
    """Write a pack source folder from `{"text","intent"}` JSONL rows (other keys ignored), holding out a stratified
    test split."""
    head = yaml.safe_load((settings.config_dir / "data_pack.yaml").read_text(encoding="utf-8"))
    test_share, seed = head.pop("test_share"), head.pop("split_seed")
    by_intent: dict[str, list[str]] = defaultdict(list)
    for n, line in enumerate(rows_path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            text, intent = row["text"], row["intent"]
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise SystemExit(f"{rows_path}:{n}: expected a JSON object with 'text' and 'intent' ({exc}).") from exc
        if not isinstance(text, str) or not isinstance(intent, str):
            raise SystemExit(f"{rows_path}:{n}: 'text' and 'intent' must be strings.")
        text, intent = text.strip(), intent.strip()
        if text and intent and text not in by_intent[intent]:
            by_intent[intent].append(text)
    seen: set[str] = set()
    rng = random.Random(seed)
    intents = []
    for intent, texts in sorted(by_intent.items()):
        texts = [t for t in texts if t not in seen]
        seen.update(texts)
        if len(texts) < MIN_ROWS_PER_INTENT:
            print(f"skipping intent {intent!r}: fewer than {MIN_ROWS_PER_INTENT} distinct rows", file=sys.stderr)
            continue
        rng.shuffle(texts)
        n_test = max(1, round(len(texts) * test_share))
        intents.append({"id": intent, "label": intent, "examples": texts[n_test:], "test_examples": texts[:n_test]})
    source = settings.state_dir / "packs" / name / "source"
    (source / "intents").mkdir(parents=True, exist_ok=True)
    # the served models learn from every row; the held-out figure comes from a build on the training split alone
    (source / "pack.yaml").write_text(
        yaml.safe_dump({"name": name, **head, "serve_on": "all_rows"}, allow_unicode=True, sort_keys=False),
        encoding="utf-8",
    )
    (source / "intents" / "data.yaml").write_text(
        yaml.safe_dump(intents, allow_unicode=True, sort_keys=False), encoding="utf-8"
    )
    # the LLM planner's prompt files: a pack from rows starts from the generic ones
    shutil.copytree(settings.config_dir / "data_pack_prompts", source / settings.prompts.dir, dirs_exist_ok=True)
    return source


def pack_settings(pack: Pack, settings: Settings) -> Settings:
    """`settings` as this pack is built with: its own `finetune`, when it sets one."""
    if pack.finetune is None or pack.finetune == settings.models.finetune:
        return settings
    return settings.model_copy(update={"models": settings.models.model_copy(update={"finetune": pack.finetune})})


def build(pack: Pack, settings: Settings, *, force: bool = False, record: bool = False) -> Path:
    """Build the pack's models into its artifact folder (a no-op when its fingerprint matches).

    A pack served on all its rows (one built from a user's rows) is built twice: on its training split alone into
    `heldout/` — the models its held-out figure comes from, and where the settings are chosen — then on every row,
    with those settings, into `models/`. The settings are chosen on folds of the rows they are chosen on, unless the
    pack's folder records that choice for the same inputs (`models/selection_record.py`); `record` runs the folds and
    writes that record."""
    settings = pack_settings(pack, settings)
    encoder = settings.encoder_path
    if not settings.models.encoder:
        bootstrap_encoder(encoder)
    out = settings.artifacts_dir(pack.name)
    chooses_on = out if pack.serve_on == "train_split" else layout.heldout_dir(out)
    source = _source_of(pack, settings)
    key = selection_key(pack, pack.train_rows(), encoder, settings)
    recorded = None if record else selection_record.read(source, key)
    built = _build_into(
        chooses_on, pack, pack.train_rows(), settings, encoder, force=force or record, recorded=recorded
    )
    if record and source is not None:
        print(f"recorded the folds' choice in {selection_record.write(source, key, layout.read_manifest(built))}")
    if pack.serve_on == "train_split":
        return built
    manifest = layout.read_manifest(built)
    return _build_into(
        out,
        pack,
        pack.served_rows(),
        settings,
        encoder,
        force=force,
        recorded=selection_record.Recorded(manifest.get("selected") or {}, {}),
        after=manifest["fingerprint"],
    )


def _source_of(pack: Pack, settings: Settings) -> Path | None:
    try:
        return find_pack(pack.name, shipped_dir=settings.packs_dir, state_dir=settings.state_dir)
    except FileNotFoundError:  # a pack made in memory (tests) has no folder, and so no record
        return None


def _build_into(
    out: Path,
    pack: Pack,
    rows: list[tuple[str, str]],
    settings: Settings,
    encoder: Path,
    *,
    force: bool,
    recorded: selection_record.Recorded | None = None,
    after: str = "",
) -> Path:
    fp = fingerprint(pack, rows, encoder, settings, extra=after)
    if not force and (out / layout.MANIFEST).exists() and layout.read_manifest(out).get("fingerprint") == fp:
        print(f"models for pack '{pack.name}' are up to date ({out})")
        return out
    started = time.time()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=".build-"))
    try:
        built = train_models(pack, rows, settings, tmp, encoder, recorded=recorded)
        manifest = {
            "pack": pack.name,
            "fingerprint": fp,
            **built,
            "built_at": time.time(),
            "build_s": round(time.time() - started, 1),
        }
        (tmp / layout.MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8")
        os.chmod(tmp, 0o755)  # mkdtemp creates 0700
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"built models for pack '{pack.name}' from {len(rows)} rows in {time.time() - started:.0f} s → {out}")
    return out


def serve_overrides(path: Path) -> dict[str, Any]:
    """The settings overrides of a Serve config's first application (`args.overrides`)."""
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    return cast(dict[str, Any], config["applications"][0].get("args", {}).get("overrides", {}))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m models.build", description=__doc__.splitlines()[0])
    parser.add_argument("--pack", default=None, help="pack name (default: BATON_PACK or config)")
    parser.add_argument("--data", type=Path, default=None, help="JSONL of {text, intent} rows to build the pack from")
    parser.add_argument("--config-dir", type=Path, default=Path("config"))
    parser.add_argument("--force", action="store_true", help="rebuild even when the fingerprint matches")
    parser.add_argument(
        "--record-selection",
        action="store_true",
        help="rebuild, choosing the settings on folds, and record that choice in the pack's folder (selection.json)",
    )
    parser.add_argument(
        "--serve-config",
        type=Path,
        default=None,
        help="build for the settings this Serve config deploys (its args.overrides: the cluster's encoder)",
    )
    parser.add_argument(
        "--device",
        default=None,
        help="encode on this device while building (e.g. cpu on a machine without the cluster's GPU)",
    )
    args = parser.parse_args(argv)

    overrides = serve_overrides(args.serve_config) if args.serve_config else {}
    if args.device:
        overrides = merged(overrides, {"models": {"device": args.device}})
    settings = load_settings(args.config_dir, None, overrides, pack=args.pack)
    if args.data:
        rows_to_pack(args.data, settings.pack, settings)
    pack = load_pack(find_pack(settings.pack, shipped_dir=settings.packs_dir, state_dir=settings.state_dir))
    build(pack, settings, force=args.force, record=args.record_selection)
    if pack.test_rows():
        figures = held_out(pack, settings)
        trained = (
            "its training split"
            if pack.serve_on == "train_split"
            else "its training split alone (the served ones: every row)"
        )
        print(
            f"pack '{pack.name}': classifier top-1 accuracy on the held-out split = {figures['classifier_top1']:.3f} "
            f"({figures['rows']} rows); fusion top-1 = {figures['fusion_top1']:.3f}; models built on {trained}"
        )
        print(f"pack '{pack.name}': remaining errors (expected → answered): {confusion_summary(figures['errors'])}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
