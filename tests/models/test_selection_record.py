"""The folds' choice recorded beside a pack (models/selection_record.py): keyed on what the choice depends on, taken
only under its own key, and current for the shipped pack that chooses on folds."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from deployments import artifacts as layout
from engine.pack import find_pack, load_pack
from models import selection_record
from models.build import pack_settings
from models.fingerprints import fingerprint, selection_key
from tests.support.packs import settings_for

MANIFEST = {"selected": {"head": "tuned", "planner": {"accept_unmarked": 0.5}}, "selection_from": "folds"}


@pytest.fixture(scope="module")
def timeflow_source():
    settings = settings_for("timeflow")
    source = find_pack("timeflow", shipped_dir=settings.packs_dir, state_dir=settings.state_dir)
    pack = load_pack(source)
    return source, pack, pack_settings(pack, settings)  # as the build reads them: the pack's own `finetune`


def test_the_key_follows_the_rows_and_the_settings_the_choice_depends_on(timeflow_source):
    _, pack, settings = timeflow_source
    rows, encoder = pack.train_rows(), settings.encoder_path
    key = selection_key(pack, rows, encoder, settings)
    assert key == selection_key(pack, list(reversed(rows)), encoder, settings)  # the rows as a set
    assert key != selection_key(pack, rows[1:], encoder, settings)
    assert key != selection_key(pack, [*rows[:-1], (rows[-1][0] + "吧", rows[-1][1])], encoder, settings)
    tune = settings.models.tune.model_copy(update={"epochs": settings.models.tune.epochs + 1})
    other = settings.model_copy(update={"models": settings.models.model_copy(update={"tune": tune})})
    assert key != selection_key(pack, rows, encoder, other)
    folds = settings.models.selection.model_copy(update={"folds": settings.models.selection.folds + 1})
    other = settings.model_copy(update={"models": settings.models.model_copy(update={"selection": folds})})
    assert key != selection_key(pack, rows, encoder, other)


def test_the_key_holds_wherever_the_checkout_and_the_encoder_lie(timeflow_source, tmp_path):
    """The fingerprint names the encoder's path (it skips a build of this state dir only); the key does not, so a
    record made on one machine holds on another."""
    _, pack, settings = timeflow_source
    rows, encoder = pack.train_rows(), settings.encoder_path
    elsewhere = tmp_path / "state" / "encoder" / encoder.resolve().name
    elsewhere.parent.mkdir(parents=True)
    elsewhere.symlink_to(encoder.resolve(), target_is_directory=True)
    copy = tmp_path / "copy" / encoder.resolve().name
    shutil.copytree(encoder.resolve(), copy, ignore=shutil.ignore_patterns("onnx", "*.safetensors"))
    assert selection_key(pack, rows, copy, settings) == selection_key(pack, rows, encoder, settings)
    assert fingerprint(pack, rows, copy, settings) != fingerprint(pack, rows, encoder, settings)


def test_a_record_is_taken_under_its_own_key_only(tmp_path, capsys):
    assert selection_record.read(tmp_path, "k") is None  # no record: the folds run
    assert selection_record.read(None, "k") is None  # a pack without a folder
    path = selection_record.write(tmp_path, "k", {**MANIFEST, "selection_report": {"fusion_top1": 0.9}})
    assert json.loads(path.read_text(encoding="utf-8"))["key"] == "k"
    got = selection_record.read(tmp_path, "k")
    assert got == selection_record.Recorded(MANIFEST["selected"], {"fusion_top1": 0.9})
    assert selection_record.read(tmp_path, "other") is None
    assert "--record-selection" in capsys.readouterr().out  # a stale record says how to refresh it


def test_only_a_choice_made_on_folds_is_recorded(tmp_path):
    with pytest.raises(SystemExit, match="no choice"):
        selection_record.write(tmp_path, "k", {"selected": None, "selection_from": None, "selection_report": {}})
    with pytest.raises(SystemExit, match="no choice"):  # a choice taken from a record is not made again
        selection_record.write(tmp_path, "k", {**MANIFEST, "selection_from": "record", "selection_report": {}})
    assert not (tmp_path / selection_record.RECORD).exists()


def test_the_shipped_record_is_current(timeflow_source):
    """Timeflow chooses its settings on folds; its record must be keyed on today's rows, settings and code, or every
    build runs the folds again. Stale: `make models PACK=timeflow RESELECT=1`, and commit selection.json."""
    source, pack, settings = timeflow_source
    assert pack.finetune and pack.serve_on == "train_split"
    key = selection_key(pack, pack.train_rows(), settings.encoder_path, settings)
    assert selection_record.read(source, key) is not None, f"{source / selection_record.RECORD} is stale"


def test_the_built_pack_took_the_recorded_choice(timeflow):
    pack, settings = timeflow
    manifest = layout.read_manifest(settings.artifacts_dir(pack.name))
    record = json.loads((Path(settings.packs_dir) / "timeflow" / selection_record.RECORD).read_text(encoding="utf-8"))
    assert manifest["selection_from"] == "record"
    assert manifest["selected"] == record["selected"] and manifest["selection_report"] == record["report"]
    assert "tune_s" in manifest["timings"] and "selection_s" not in manifest["timings"]  # one tune, no folds
