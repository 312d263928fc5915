"""Chinese intent benchmark rows expanded offline from the home-assistant-intents (zh-CN) templates."""

# Needs `home-assistant-intents==2026.11.25` (Apache-2.0, pure data wheel from PyPI, no
# network at run time). Its data/zh-CN.json holds 40 intents written as hassil
# templates ("(a|b)" choice, "[a]" optional, "{list}" slot, "<rule>" expansion rule).
# Each template is sampled with a seeded RNG; slots that Home Assistant fills from a
# user's own devices ({name}, {area}, {floor}, wildcards) get the fixed fillers below.
# The dataset has no split of its own: "split" is assigned per *template* (about 1 in
# 5 templates of each intent is "test"), so no test sentence shares a template with a
# train sentence. Output is identical for identical (package version, language, seed).

from __future__ import annotations

import argparse
import json
import math
import random
import re
import sys
import time
import zlib
from collections.abc import Iterator
from importlib.metadata import version as _pkg_version
from typing import Any

PACKAGE = "home-assistant-intents"
PINNED_VERSION = "2026.11.25"

_AREAS = ["客厅", "卧室", "主卧", "次卧", "厨房", "书房", "餐厅", "卫生间", "阳台", "儿童房", "车库", "玄关"]
_FLOORS = ["一", "二", "三", "顶", "负一"]  # templates append [楼|层]
_NAMES_BY_DOMAIN = {
    "light": ["客厅灯", "台灯", "吸顶灯", "床头灯", "落地灯", "灯带"],
    "switch": ["插座", "热水器", "饮水机", "排气扇开关"],
    "fan": ["吊扇", "落地扇", "空气净化器"],
    "cover": ["窗帘", "百叶窗", "车库门", "遮阳棚"],
    "lock": ["前门锁", "大门锁", "后门锁"],
    "valve": ["水阀", "燃气阀门", "浇水阀"],
    "climate": ["空调", "地暖", "暖气"],
    "media_player": ["电视", "音箱", "客厅音响", "投影仪"],
    "input_boolean": ["访客模式", "勿扰开关"],
    "vacuum": ["扫地机器人", "扫地机", "拖地机器人"],
    "lawn_mower": ["割草机", "割草机器人"],
    "todo": ["待办清单", "工作清单", "家务清单"],
    "scene": ["回家模式", "观影模式", "睡眠模式"],
    "script": ["离家", "晨间", "晚安"],
    "sensor": ["温度传感器", "湿度传感器"],
    "binary_sensor": ["门磁", "人体传感器", "窗户传感器"],
    "person": ["小明", "妈妈", "爸爸"],
    "weather": ["家里", "天气预报"],
}
_GENERIC_NAMES = sorted({n for names in _NAMES_BY_DOMAIN.values() for n in names})
_WILDCARDS = {
    "message": ["晚饭做好了", "该出门了", "大家下楼吃饭", "快递到了"],
    "search_query": ["周杰伦的歌", "新闻联播", "轻音乐"],
    "zone": ["家", "公司", "学校"],
    "timer_name": ["煮饭", "泡面", "烤箱", "洗衣服"],
    "timer_command": ["关闭客厅灯", "打开空调", "提醒我喝水"],
    "shopping_list_item": ["牛奶", "鸡蛋", "面包", "苹果", "酱油"],
    "todo_list_item": ["交电费", "取快递", "预约体检", "洗车"],
}


def _parse(template: str) -> Any:
    """Parse a hassil template into nested ('alt', [seq]) / ('seq', [item]) nodes."""
    pos = 0

    def alt(closer: str | None) -> Any:
        nonlocal pos
        seqs, items, buf = [], [], []

        def flush() -> None:
            if buf:
                items.append(("text", "".join(buf)))
                buf.clear()

        while pos < len(template):
            ch = template[pos]
            if closer is not None and ch == closer:
                break
            pos += 1
            if ch == "|":
                flush()
                seqs.append(("seq", items))
                items = []
            elif ch in "([":
                flush()
                inner = alt(")" if ch == "(" else "]")
                pos += 1  # the closer
                items.append(("alt", inner[1] + [("seq", [])]) if ch == "[" else inner)
            elif ch in "{<":
                flush()
                end = template.index("}" if ch == "{" else ">", pos)
                ref = template[pos:end]
                pos = end + 1
                items.append(("slot" if ch == "{" else "rule", ref.split(":")[0]))
            elif ch == ";":
                raise ValueError(f"permutation syntax not supported: {template!r}")
            else:
                buf.append(ch)
        if closer is not None and pos >= len(template):
            raise ValueError(f"unbalanced template: {template!r}")
        flush()
        seqs.append(("seq", items))
        return ("alt", seqs)

    return alt(None)


class _Sampler:
    def __init__(self, lang_data: dict[str, Any]):
        self.lists = lang_data.get("lists", {})
        self.rules = {k: _parse(v) for k, v in lang_data.get("expansion_rules", {}).items()}
        self._cache: dict[str, Any] = {}

    def parsed(self, template: str) -> Any:
        if template not in self._cache:
            self._cache[template] = _parse(template)
        return self._cache[template]

    def slot_value(self, name: str, rng: random.Random, domains: list[str]) -> str:
        if name == "area":
            return rng.choice(_AREAS)
        if name == "floor":
            return rng.choice(_FLOORS)
        if name == "name":
            pool = [n for d in domains for n in _NAMES_BY_DOMAIN.get(d, [])]
            return rng.choice(pool or _GENERIC_NAMES)
        spec = self.lists.get(name)
        if spec is None or spec.get("wildcard"):
            return rng.choice(_WILDCARDS.get(name, _GENERIC_NAMES))
        if "range" in spec:
            r = spec["range"]
            return str(rng.randrange(int(r["from"]), int(r["to"]) + 1, int(r.get("step", 1))))
        value = rng.choice(spec["values"])
        text = value["in"] if isinstance(value, dict) else str(value)
        return self.render(self.parsed(text), rng, domains)

    def render(self, node: Any, rng: random.Random, domains: list[str]) -> str:
        kind, arg = node
        if kind == "alt":
            return self.render(rng.choice(arg), rng, domains)
        if kind == "seq":
            return "".join(self.render(n, rng, domains) for n in arg)
        if kind == "text":
            return arg
        if kind == "rule":
            return self.render(self.rules[arg], rng, domains)
        return self.slot_value(arg, rng, domains)


def _is_test(intent: str, template: str) -> bool:
    return zlib.crc32(f"{intent}\t{template}".encode()) % 5 == 0


def iter_rows(
    language: str = "zh-CN", per_intent: int = 150, seed: int = 0, keep_latin: bool = False
) -> list[dict[str, Any]]:
    """Return {"text", "intent", "split", "template", "domains"} rows, each text once and unambiguous."""
    rows = list(_generate(language, per_intent, seed))
    if not keep_latin:  # upstream zh-CN mixes in English verbs ("set水阀开度为…"); units like K/% stay
        rows = [r for r in rows if not re.search(r"[A-Za-z]{2,}", r["text"])]
    labels: dict[str, set[str]] = {}
    for row in rows:
        labels.setdefault(row["text"], set()).add(row["intent"])
    kept, seen = [], set()
    for row in rows:  # drop texts two intents can produce; keep the first copy of the rest
        if len(labels[row["text"]]) == 1 and row["text"] not in seen:
            seen.add(row["text"])
            kept.append(row)
    return kept


def _generate(language: str, per_intent: int, seed: int) -> Iterator[dict[str, Any]]:
    from home_assistant_intents import get_intents

    data = get_intents(language)
    if data is None:
        raise SystemExit(f"{PACKAGE} has no data for language {language!r}")
    sampler = _Sampler(data)
    strip_ws = data.get("settings", {}).get("ignore_whitespace", False)
    for intent in sorted(data["intents"]):
        templates = []
        for item in data["intents"][intent]["data"]:
            domains = (item.get("requires_context") or {}).get("domain") or []
            domains = [domains] if isinstance(domains, str) else list(domains)
            templates += [(s, domains) for s in item["sentences"]]
        test_flags = [_is_test(intent, t) for t, _ in templates]
        if len(templates) > 1 and not any(test_flags):  # every intent gets a test template
            test_flags[min(range(len(templates)), key=lambda i: zlib.crc32(templates[i][0].encode()))] = True
        k = max(2, math.ceil(per_intent / len(templates)))
        for (template, domains), is_test in zip(templates, test_flags, strict=True):
            rng = random.Random(f"{seed}\t{language}\t{intent}\t{template}")
            node, seen = sampler.parsed(template), set()
            for _ in range(k * 5):
                text = sampler.render(node, rng, domains)
                text = re.sub(r"\s+", "" if strip_ws else " ", text).strip()
                if text and text not in seen:
                    seen.add(text)
                    yield {
                        "text": text,
                        "intent": intent,
                        "split": "test" if is_test else "train",
                        "template": template,
                        "domains": domains,
                    }
                    if len(seen) >= k:
                        break


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True, help="JSONL file to write ('-' for stdout)")
    ap.add_argument("--language", default="zh-CN", help="zh-CN (default); zh-HK/zh-TW get Simplified fillers")
    ap.add_argument("--keep-latin", action="store_true", help="keep sentences with English words in them")
    ap.add_argument("--per-intent", type=int, default=150, help="target sentences per intent (before dedupe)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)

    installed = _pkg_version(PACKAGE)
    if installed != PINNED_VERSION:
        print(f"warning: {PACKAGE} {installed} installed, rows were tuned on {PINNED_VERSION}", file=sys.stderr)
    start = time.perf_counter()
    counts: dict[str, int] = {}
    intents: set[str] = set()
    out = sys.stdout if args.out == "-" else open(args.out, "w", encoding="utf-8")
    try:
        for row in iter_rows(args.language, args.per_intent, args.seed, args.keep_latin):
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
            counts[row["split"]] = counts.get(row["split"], 0) + 1
            intents.add(row["intent"])
    finally:
        if out is not sys.stdout:
            out.close()
    print(
        f"{PACKAGE}=={installed} {args.language}: {len(intents)} intents, "
        + ", ".join(f"{k}={v}" for k, v in sorted(counts.items()))
        + f" rows in {time.perf_counter() - start:.2f}s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
