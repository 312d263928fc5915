"""Contract tests for models.build: train-only artifacts, the fingerprint, rows → pack, the CLI, held-out accuracy.

Real encoder and real training throughout; the shipped packs are built once into the session state dir
(`cockpit` / `timeflow` fixtures), extra packs are tiny and go to temporary state dirs.
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from pathlib import Path

import faiss
import joblib
import numpy as np
import pytest
import yaml
from sklearn.base import clone

from deployments import artifacts as layout
from engine.pack import SPECIAL_INTENTS, Rules, find_pack, load_pack
from models.build import build, rows_to_pack
from models.evaluate import held_out
from tests.models.build_helpers import CONFIG_DIR, SHORT_TUNE, run_module, settings_in, tmp_state, write_jsonl

MIN_HELD_OUT_ACCURACY = 0.90

# A small hand-written user dataset: 4 intents × 12 rows.
HANDWRITTEN = {
    "water_plants": [
        "给阳台的花浇点水",
        "帮我浇一下花",
        "花盆里的土干了，浇水吧",
        "今天记得给绿萝浇水",
        "多肉该浇水了",
        "自动浇花打开",
        "把花园的喷灌开一下",
        "给盆栽补点水",
        "客厅那盆花需要浇水",
        "帮我给植物浇浇水",
        "花快渴死了，赶紧浇水",
        "启动浇花系统",
    ],
    "order_takeout": [
        "帮我点份外卖",
        "我想叫个外卖",
        "点一份黄焖鸡米饭",
        "来一杯奶茶外卖",
        "中午帮我订个盒饭",
        "叫份麻辣烫送到公司",
        "点个披萨当晚饭",
        "帮我下单一份寿司外卖",
        "晚上想吃烧烤，帮我点",
        "外卖来一份牛肉面",
        "订两份炸鸡送到家",
        "帮我在外卖平台点份饺子",
    ],
    "check_weather": [
        "今天天气怎么样",
        "明天会下雨吗",
        "外面现在多少度",
        "这周末天气好不好",
        "查一下北京的天气",
        "后天要带伞吗",
        "今天风大不大",
        "明早会降温吗",
        "最近几天有没有雾霾",
        "上海明天晴天吗",
        "今晚气温多少",
        "看看下午会不会下雪",
    ],
    "call_taxi": [
        "帮我叫辆车",
        "打个车去火车站",
        "叫一辆出租车到楼下",
        "我要打车回家",
        "帮我约个网约车",
        "叫辆专车去机场",
        "现在打车去公司",
        "给我叫个快车",
        "约一辆明早七点的车",
        "帮我叫车到医院",
        "打车去电影院",
        "叫个顺风车去市中心",
    ],
}
CLI_PACK = "handwritten"


def data_pack_head() -> dict:
    return yaml.safe_load((CONFIG_DIR / "data_pack.yaml").read_text(encoding="utf-8"))


@pytest.fixture(params=["cockpit", "timeflow"])
def shipped(request):
    """(pack, settings) of each shipped pack, built (once per session) into the session state dir."""
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="module")
def embedder(cockpit):
    from models.pack_models import sentence_encoder

    _, settings = cockpit
    return sentence_encoder(settings, settings.encoder_path)


# --- (a) the test split never reaches an artifact -------------------------------------------------------------


def test_retriever_rows_are_exactly_the_training_split(shipped):
    pack, settings = shipped
    out = settings.artifacts_dir(pack.name)
    rows = json.loads((out / layout.RETRIEVER_ROWS).read_text(encoding="utf-8"))
    assert [(r["text"], r["intent"]) for r in rows] == pack.train_rows()
    test_texts = {t for t, _ in pack.test_rows()}
    assert test_texts, "a shipped pack without a test split proves nothing here"
    assert not test_texts & {r["text"] for r in rows}
    assert faiss.read_index(str(out / layout.RETRIEVER_INDEX)).ntotal == len(rows)


def test_manifest_counts_the_training_split(shipped):
    pack, settings = shipped
    manifest = layout.read_manifest(settings.artifacts_dir(pack.name))
    train = pack.train_rows()
    assert manifest["pack"] == pack.name
    assert manifest["train_rows"] == len(train)
    assert manifest["train_counts"] == dict(Counter(i for _, i in train))
    assert manifest["labels"] == sorted({i for _, i in train})
    assert manifest["detector_labels"] == sorted({i for _, i in train} - set(SPECIAL_INTENTS))


def test_ngram_vocabulary_was_fit_on_training_texts_only(shipped):
    pack, settings = shipped
    ngram = joblib.load(settings.artifacts_dir(pack.name) / layout.CLASSIFIER_NGRAM)
    tfidf = ngram.named_steps["tfidf"]
    train_texts = [t for t, _ in pack.train_rows()]
    refit = clone(tfidf).fit(train_texts)
    assert set(tfidf.vocabulary_) == set(refit.vocabulary_)
    with_test = clone(tfidf).fit(train_texts + [t for t, _ in pack.test_rows()])
    test_only = set(with_test.vocabulary_) - set(refit.vocabulary_)
    assert test_only, "expected the held-out texts to hold some n-gram the training texts lack"
    assert not test_only & set(tfidf.vocabulary_), sorted(test_only & set(tfidf.vocabulary_))[:10]
    assert list(ngram.named_steps["lr"].classes_) == list(
        range(len(layout.read_manifest(settings.artifacts_dir(pack.name))["labels"]))
    )


def test_heads_match_the_manifest_and_the_encoder(shipped, embedder):
    pack, settings = shipped
    out = settings.artifacts_dir(pack.name)
    manifest = layout.read_manifest(out)
    clf, det = layout.LinearHead.load(out / layout.CLASSIFIER_HEAD), layout.LinearHead.load(out / layout.DETECTOR_HEAD)
    assert clf.labels == manifest["labels"] and clf.weight.shape == (len(clf.labels), embedder.dim)
    assert det.labels == manifest["detector_labels"] and det.weight.shape == (len(det.labels), embedder.dim)


def test_index_row_i_is_the_embedding_of_rows_json_row_i(shipped, embedder):
    from models.pack_models import sentence_encoder

    pack, settings = shipped
    out = settings.artifacts_dir(pack.name)
    rows = json.loads((out / layout.RETRIEVER_ROWS).read_text(encoding="utf-8"))
    index = faiss.read_index(str(out / layout.RETRIEVER_INDEX))
    picks = sorted({0, len(rows) // 3, len(rows) // 2, len(rows) - 1})
    stored = np.stack([index.reconstruct(i) for i in picks])
    # the encoder the pack serves: its own tuned one (timeflow), or the shared one
    own = layout.encoder_for(out, settings.encoder_path)
    fresh = (embedder if own == settings.encoder_path else sentence_encoder(settings, own)).encode(
        [rows[i]["text"] for i in picks]
    )
    assert np.all(np.sum(stored * fresh, axis=1) > 0.999)


# --- (b) fingerprint ------------------------------------------------------------------------------------------


def test_build_again_is_a_no_op(cockpit, capsys):
    pack, settings = cockpit
    out = settings.artifacts_dir(pack.name)
    before = layout.read_manifest(out)
    stamp = (out / layout.CLASSIFIER_HEAD).stat().st_mtime_ns
    assert build(pack, settings) == out
    assert "up to date" in capsys.readouterr().out
    assert layout.read_manifest(out) == before  # built_at included
    assert (out / layout.CLASSIFIER_HEAD).stat().st_mtime_ns == stamp


def test_a_training_row_rebuilds_both_builds_and_a_held_out_row_only_the_served_one(cli_build, tmp_path, capsys):
    """On a copy of the tiny CLI-built pack (served on every row, its figure from `heldout/`), on the frozen encoder
    (what decides a rebuild is the fingerprint, not the tune: the tuned CLI build has tests of its own): same data is a
    no-op; a new training row rebuilds both; a new held-out row reaches the served models only, never the held-out
    ones."""
    state_a, _ = cli_build
    state = tmp_state(tmp_path / "state", state_a / "encoder" / "multilingual-e5-small")
    shutil.copytree(state_a / "packs" / CLI_PACK / "source", state / "packs" / CLI_PACK / "source")
    settings = settings_in(state, CLI_PACK)
    source = find_pack(CLI_PACK, shipped_dir=settings.packs_dir, state_dir=state)
    assert source == state / "packs" / CLI_PACK / "source"
    head = source / "pack.yaml"
    head.write_text(head.read_text(encoding="utf-8").replace("finetune: true", "finetune: false"), encoding="utf-8")
    assert load_pack(source).finetune is False
    out = settings.artifacts_dir(CLI_PACK)
    heldout = layout.heldout_dir(out)
    build(load_pack(source), settings)
    first, first_held = layout.read_manifest(out), layout.read_manifest(heldout)
    capsys.readouterr()

    build(load_pack(source), settings)
    assert "up to date" in capsys.readouterr().out
    assert layout.read_manifest(out)["built_at"] == first["built_at"]

    data = source / "intents" / "data.yaml"
    intents = yaml.safe_load(data.read_text(encoding="utf-8"))
    weather = next(i for i in intents if i["id"] == "check_weather")
    weather["examples"].append("周日出门要不要带雨衣")
    data.write_text(yaml.safe_dump(intents, allow_unicode=True, sort_keys=False), encoding="utf-8")
    build(load_pack(source), settings)
    assert "built models" in capsys.readouterr().out
    second, second_held = layout.read_manifest(out), layout.read_manifest(heldout)
    assert second["built_at"] > first["built_at"] and second_held["built_at"] > first_held["built_at"]
    assert second["fingerprint"] != first["fingerprint"]
    assert second["train_rows"] == first["train_rows"] + 1 and second_held["train_rows"] == first_held["train_rows"] + 1
    for folder in (out, heldout):
        rows = json.loads((folder / layout.RETRIEVER_ROWS).read_text(encoding="utf-8"))
        assert {"text": "周日出门要不要带雨衣", "intent": "check_weather"} in rows
    assert not list(out.parent.glob(".build-*")), "temporary build folder left behind"

    weather["test_examples"].append("下周三会不会刮台风")
    data.write_text(yaml.safe_dump(intents, allow_unicode=True, sort_keys=False), encoding="utf-8")
    build(load_pack(source), settings)
    assert layout.read_manifest(heldout) == second_held
    third = layout.read_manifest(out)
    assert third["train_rows"] == second["train_rows"] + 1
    row = {"text": "下周三会不会刮台风", "intent": "check_weather"}
    assert row in json.loads((out / layout.RETRIEVER_ROWS).read_text(encoding="utf-8"))
    assert row not in json.loads((heldout / layout.RETRIEVER_ROWS).read_text(encoding="utf-8"))


# --- (c) rows_to_pack -----------------------------------------------------------------------------------------


def messy_rows_file(path: Path) -> Path:
    lines = [
        "",
        json.dumps(
            {"text": "  今天天气怎么样  ", "intent": "check_weather", "source": "x", "n": 1}, ensure_ascii=False
        ),
    ]
    for intent, texts in HANDWRITTEN.items():
        for k, text in enumerate(texts):
            lines.append(
                json.dumps(
                    {"text": text, "intent": intent, "source": "handwritten", "id": k, "tags": ["a"]},
                    ensure_ascii=False,
                )
            )
            if k % 4 == 0:
                lines.append("   ")
    lines.append(
        json.dumps({"intent": "order_takeout", "text": "帮我点份外卖", "extra": None}, ensure_ascii=False)
    )  # duplicate
    lines.append(
        json.dumps({"text": "帮我叫辆车", "intent": "order_takeout"}, ensure_ascii=False)
    )  # same text, second intent
    lines.append(json.dumps({"text": "只有一句的意图", "intent": "lonely"}, ensure_ascii=False))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_rows_to_pack_builds_a_stratified_disjoint_split(tmp_path):
    settings = settings_in(tmp_path / "state", "messy")
    source = rows_to_pack(messy_rows_file(tmp_path / "rows.jsonl"), "messy", settings)
    assert source == tmp_path / "state" / "packs" / "messy" / "source"
    pack = load_pack(source)  # the strict pack schema: any leaked extra key would fail here
    head = data_pack_head()
    assert pack.name == "messy"
    assert pack.rules == Rules.model_validate(head["rules"]) and pack.responses == head["responses"]
    assert sorted(pack.intent_ids) == sorted(HANDWRITTEN)  # 'lonely' (one row) is skipped

    everything = [t for i in pack.intents for t in i.examples + i.test_examples]
    assert len(everything) == len(set(everything)), "a text landed twice (duplicate row or two intents)"
    assert set(everything) == {t for texts in HANDWRITTEN.values() for t in texts}
    assert all(t == t.strip() for t in everything)
    for intent in pack.intents:
        n = len(intent.examples) + len(intent.test_examples)
        assert intent.examples and intent.test_examples, intent.id
        assert len(intent.test_examples) == max(1, round(n * head["test_share"])), intent.id
        assert not set(intent.examples) & set(intent.test_examples)
    train, test = {t for t, _ in pack.train_rows()}, {t for t, _ in pack.test_rows()}
    assert not train & test


def test_a_pack_from_rows_gets_the_default_prompt_files_and_they_render(tmp_path):
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from engine.llm.prompts import PromptSet, catalog_of

    settings = settings_in(tmp_path / "state", "messy")
    source = rows_to_pack(messy_rows_file(tmp_path / "rows.jsonl"), "messy", settings)
    assert sorted(p.name for p in (source / "prompts").iterdir()) == ["AGENTS.md", "PROFILE.md", "SKILLS.md", "SOUL.md"]
    text = PromptSet.load(source, settings.prompts).render(
        catalog=catalog_of(load_pack(source)), now=datetime(2026, 12, 1, 10, tzinfo=ZoneInfo("Asia/Shanghai"))
    )
    assert "order_takeout" in text
    assert "2026年12月1日" not in text, "the planner states the time after the unchanging prompt (prefix caching)"


def test_rows_to_pack_is_deterministic(tmp_path):
    rows = messy_rows_file(tmp_path / "rows.jsonl")
    a = rows_to_pack(rows, "p", settings_in(tmp_path / "a", "p"))
    b = rows_to_pack(rows, "p", settings_in(tmp_path / "b", "p"))
    assert (a / "intents" / "data.yaml").read_text(encoding="utf-8") == (b / "intents" / "data.yaml").read_text(
        encoding="utf-8"
    )


def test_two_rows_per_intent_is_enough_for_both_splits(tmp_path):
    rows = write_jsonl(
        tmp_path / "rows.jsonl",
        [
            {"text": "甲一", "intent": "a"},
            {"text": "甲二", "intent": "a"},
            {"text": "乙一", "intent": "b"},
            {"text": "乙二", "intent": "b"},
        ],
    )
    pack = load_pack(rows_to_pack(rows, "two", settings_in(tmp_path / "state", "two")))
    assert {i.id: (len(i.examples), len(i.test_examples)) for i in pack.intents} == {"a": (1, 1), "b": (1, 1)}


@pytest.mark.parametrize(
    "bad", ['{"text": "没有意图"}', "{not json", '["帮我叫辆车", "call_taxi"]', '"just a string"', "42"]
)
def test_malformed_line_exits_with_its_line_number(tmp_path, bad):
    good = json.dumps({"text": "帮我叫辆车", "intent": "call_taxi"}, ensure_ascii=False)
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join([good, "", good.replace("帮我叫辆车", "打车去机场"), bad, good]) + "\n", encoding="utf-8")
    settings = settings_in(tmp_path / "state", "broken")
    with pytest.raises(SystemExit) as exc:
        rows_to_pack(path, "broken", settings)
    assert re.search(rf"{re.escape(str(path))}:4:", str(exc.value.code)), exc.value.code
    assert not (tmp_path / "state" / "packs" / "broken").exists(), "a malformed file must not leave a half-written pack"


# --- (d) the CLI ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cli_build(cockpit, module_dir):
    """`python -m models.build --pack handwritten --data rows.jsonl` into a fresh state dir, run once."""
    _, settings = cockpit
    base = module_dir
    state = tmp_state(base / "state", settings.encoder_path)
    rows = write_jsonl(
        base / "rows.jsonl",
        [{"text": t, "intent": i, "source": "handwritten"} for i, ts in HANDWRITTEN.items() for t in ts],
    )
    proc = run_module(
        ["models.build", "--pack", CLI_PACK, "--data", str(rows), "--serve-config", str(SHORT_TUNE)], state_dir=state
    )
    return state, proc


def test_cli_builds_a_pack_from_jsonl_rows(cli_build):
    state, proc = cli_build
    assert proc.returncode == 0, proc.stdout + proc.stderr
    match = re.search(
        r"pack 'handwritten': classifier top-1 accuracy on the held-out split = ([0-9.]+) \((\d+) rows\)", proc.stdout
    )
    assert match, proc.stdout
    accuracy, n_test = float(match.group(1)), int(match.group(2))
    print(f"\nhand-written CLI pack: held-out accuracy {accuracy:.3f} on {n_test} rows")
    assert n_test == 4 * max(1, round(12 * data_pack_head()["test_share"]))
    assert accuracy >= 0.75
    served = layout.read_manifest(state / "packs" / CLI_PACK / "models")
    held = layout.read_manifest(layout.heldout_dir(state / "packs" / CLI_PACK / "models"))
    assert held["train_rows"] == 4 * 12 - n_test and served["train_rows"] == 4 * 12  # the served models learn every row
    assert sorted(served["labels"]) == sorted(HANDWRITTEN) == served["detector_labels"] == held["labels"]
    # the link in the temp state dir was reused, not replaced by a fresh bootstrap
    assert (state / "encoder" / "multilingual-e5-small").is_symlink()


# --- (e) held-out accuracy of the shipped packs ---------------------------------------------------------------


def test_held_out_accuracy_of_shipped_packs(shipped):
    pack, settings = shipped
    accuracy = held_out(pack, settings)["classifier_top1"]
    print(
        f"\n{pack.name}: classifier top-1 accuracy on the held-out split = {accuracy:.3f} "
        f"({len(pack.test_rows())} rows)"
    )
    assert accuracy >= MIN_HELD_OUT_ACCURACY


def test_packs_for_a_cluster_are_built_on_its_serve_configs_encoder():
    """`--serve-config` takes the encoder (and the rest) from the config a cluster deploys; `--device` only moves the
    build's encoder passes (a CPU build machine for a GPU cluster)."""
    from config.settings import load_settings, merged
    from models.build import serve_overrides

    overrides = serve_overrides(CONFIG_DIR / "serve_gpu.yaml")
    settings = load_settings(CONFIG_DIR, {}, merged(overrides, {"models": {"device": "cpu"}}))
    assert settings.encoder_path == Path(overrides["models"]["encoder"]) and settings.models.device == "cpu"
    assert settings.models.encoder_runtime == overrides["models"]["encoder_runtime"]


# --- (f) the tuned encoder saw the training rows only ---------------------------------------------------------


def test_cockpit_serves_the_frozen_encoder_and_timeflow_one_tuned_on_its_training_split_alone(shipped):
    """models.finetune is false by default: cockpit sets nothing and gets no tuned folder and the configured values
    (models.selection.frozen is off). Timeflow sets `finetune: true`: its encoder saw the training split and nothing
    else (the stamp is the digest of the very rows its tuning ran on), and its folds chose the settings, the
    planner's `accept_unmarked` among them (models/unmarked_plans.py)."""
    from models.finetune import read_stamp, rows_digest

    pack, settings = shipped
    out = settings.artifacts_dir(pack.name)
    manifest = layout.read_manifest(out)
    assert not settings.models.finetune and not settings.models.selection.frozen
    if pack.name == "cockpit":
        assert pack.finetune is None
        assert (
            manifest["tuned_encoder"] is None
            and not (out / layout.TUNED_ENCODER).exists()
            and manifest["selected"] is None
        )
        return
    assert pack.finetune is True and pack.serve_on == "train_split"
    train = pack.train_rows()
    assert read_stamp(out / layout.TUNED_ENCODER)["rows_sha256"] == rows_digest(
        [t for t, _ in train], [i for _, i in train]
    )
    assert not {t for t, _ in pack.test_rows()} & {t for t, _ in train}
    chosen = manifest["selected"]["planner"]["accept_unmarked"]
    assert chosen in settings.models.selection.accept_unmarked
    curve = manifest["selection_report"]["unmarked_plans"]["by_accept_unmarked"]
    assert (
        next(c for c in curve if c["accept_unmarked"] == chosen)["share"]
        <= settings.models.selection.max_unmarked_plans
    )


def test_a_pack_from_rows_held_out_figure_comes_from_an_encoder_tuned_without_them(cli_build):
    """DATA path (a pack from rows tunes: config/data_pack.yaml): the held-out build's encoder saw the training split
    alone, the served one every row. A stamp is the digest of the very (text, label) rows its tuning ran on
    (models/pack_models.py); the folds' encoders: tests/models/test_selection.py."""
    from models.finetune import read_stamp, rows_digest

    state, proc = cli_build
    assert proc.returncode == 0, proc.stdout + proc.stderr
    settings = settings_in(state, CLI_PACK)
    pack = load_pack(find_pack(CLI_PACK, shipped_dir=settings.packs_dir, state_dir=state))
    out = settings.artifacts_dir(CLI_PACK)
    digest = lambda rows: rows_digest([t for t, _ in rows], [i for _, i in rows])  # noqa: E731
    assert read_stamp(layout.heldout_dir(out) / layout.TUNED_ENCODER)["rows_sha256"] == digest(pack.train_rows())
    assert read_stamp(out / layout.TUNED_ENCODER)["rows_sha256"] == digest(pack.served_rows())
    assert pack.test_rows() and not {t for t, _ in pack.test_rows()} & {t for t, _ in pack.train_rows()}
