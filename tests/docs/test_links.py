"""Every relative link in README.md, docs/ and the benchmark summary resolves, anchors included; README stays short."""

from __future__ import annotations

import re
import sys
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README_MAX_BYTES = 15_000

# [text](target) and ![alt](target); the text may hold brackets one level deep, the target no spaces
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
FENCE = re.compile(r"^\s*(```|~~~)")
INLINE_CODE = re.compile(r"`[^`\n]*`")
HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
EXTERNAL = ("http://", "https://", "mailto:", "tel:", "data:")


def documents() -> list[Path]:
    docs = sorted((ROOT / "docs").rglob("*.md"))
    return [ROOT / "README.md", *docs, ROOT / "benchmarks" / "results" / "SUMMARY.md"]


def prose_lines(text: str) -> list[str]:
    """The lines outside fenced code blocks, with inline code spans blanked out."""
    lines, fenced = [], False
    for line in text.splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            lines.append(INLINE_CODE.sub("", line))
    return lines


def links(path: Path) -> list[str]:
    """Every link target in the prose; a link's text may wrap onto the next line."""
    prose = "\n".join(prose_lines(path.read_text(encoding="utf-8")))
    return [m.group(1) for m in LINK.finditer(prose)]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lowercase, punctuation dropped (not - or _), spaces to hyphens; CJK kept."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link in a heading keeps its text
    text = text.replace("`", "").lower()
    kept = []
    for ch in text:
        if ch in "-_" or ch == " ":
            kept.append(ch)
        elif unicodedata.category(ch)[0] in "LNM":  # letters (CJK included), digits, combining marks
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """Every heading's anchor in a markdown file; repeated headings get -1, -2, … as on GitHub."""
    seen: dict[str, int] = {}
    found = set()
    fenced = False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        match = None if fenced else HEADING.match(line)
        if match:
            base = slug(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def broken_links(path: Path) -> list[str]:
    problems = []
    for target in links(path):
        if target.lower().startswith(EXTERNAL):
            continue
        file_part, _, anchor = target.partition("#")
        resolved = path if not file_part else (path.parent / file_part).resolve()
        where = f"{path.relative_to(ROOT)}: {target}"
        if not resolved.exists():
            problems.append(f"{where} (no such file)")
        elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
            problems.append(f"{where} (no heading #{anchor} in {resolved.relative_to(ROOT)})")
    return problems


def test_the_documents_exist():
    missing = [str(p.relative_to(ROOT)) for p in documents() if not p.is_file()]
    assert not missing, f"missing: {missing}"
    assert len(documents()) > 2, "docs/ holds no pages"


def test_every_relative_link_resolves():
    problems = [problem for path in documents() if path.is_file() for problem in broken_links(path)]
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_readme_is_short():
    size = (ROOT / "README.md").stat().st_size
    assert size <= README_MAX_BYTES, (
        f"README.md is {size} bytes; keep it under {README_MAX_BYTES} and move detail to docs/"
    )


def test_slug_follows_github():
    assert slug("Laptop → multi-node → KubeRay") == "laptop--multi-node--kuberay"
    assert slug("The `baton.yaml` file") == "the-batonyaml-file"
    assert slug("WebSocket conversation (seed 002)") == "websocket-conversation-seed-002"
    assert slug("意图 质量") == "意图-质量"
    assert slug("snake_case and kebab-case") == "snake_case-and-kebab-case"


def test_a_broken_link_is_reported(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    (tmp_path / "a.md").write_text("# Top\n[ok](a.md#top) [gone](b.md) [bad](a.md#nowhere) `[code](x.md)`\n")
    problems = broken_links(tmp_path / "a.md")
    assert problems == ["a.md: b.md (no such file)", "a.md: a.md#nowhere (no heading #nowhere in a.md)"]
