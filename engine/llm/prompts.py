"""Per-pack system prompts (seed 004's prompt system): Markdown files under `<pack dir>/prompts/`, loaded once in
a fixed order and rendered with Jinja2 for each call.

Files, in load order: `AGENTS.md` (required: the role), `SOUL.md` (required: personality and manner),
`PROFILE.md` (optional: the user), `SKILLS.md` (optional: what the assistant can do). The variables a file may
use are `catalog`, `user_profile`, `now`, `now_iso` and `capabilities` (see `PromptSet.render`); any other name
is an error that names it, so a typo in a prompt fails the first render instead of reaching the model as blank.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import jinja2

from config.llm import PromptsConfig

if TYPE_CHECKING:  # only for the annotation: this module must not need engine.pack at import time
    from engine.pack import Pack

FILE_ORDER: tuple[tuple[str, bool], ...] = (
    ("AGENTS.md", True),
    ("SOUL.md", True),
    ("PROFILE.md", False),
    ("SKILLS.md", False),
)
WEEKDAYS = ("星期一", "星期二", "星期三", "星期四", "星期五", "星期六", "星期日")
# the special intents (social, out of scope) are the router's fallbacks, not actions the model may pick
_SPECIAL_PREFIX = "__"


class PromptError(ValueError):
    """A prompt file is missing, does not parse, or names an unknown variable; the message names the file."""


def catalog_of(pack: Pack, *, include_special: bool = False) -> list[dict[str, Any]]:
    """The pack's intents as plain dicts, the shape `PromptSet.render(catalog=...)` expects:
    {id, label, domain, description, agent, action, confirm, slots: [{name, type, required}]}.
    The special intents (`__social__`, `__out_of_scope__`) are left out unless `include_special`."""
    return [
        {
            "id": intent.id,
            "label": intent.label,
            "domain": intent.domain,
            # Intent has no description today; read it if a later pack schema adds one
            "description": getattr(intent, "description", "") or "",
            "agent": intent.agent,
            "action": intent.action,
            "confirm": intent.confirm,
            "slots": [{"name": s.name, "type": s.type, "required": s.required} for s in intent.slots],
        }
        for intent in pack.intents
        if include_special or not intent.id.startswith(_SPECIAL_PREFIX)
    ]


def format_now(now: datetime, zone: tzinfo) -> str:
    """'2026年12月1日 星期二 10:00（Asia/Shanghai）': `now` in `zone`, the way the prompt states the time."""
    local = now.astimezone(zone)
    name = getattr(zone, "key", None) or local.tzname() or "UTC"
    return f"{local.year}年{local.month}月{local.day}日 {WEEKDAYS[local.weekday()]} {local:%H:%M}（{name}）"


@dataclass(frozen=True)
class PromptSection:
    name: str
    path: Path
    template: jinja2.Template


def _environment() -> jinja2.Environment:
    # StrictUndefined: an unknown variable raises; trim/lstrip so `{% for %}` lines leave no blank lines behind
    return jinja2.Environment(
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
    )


class PromptSet:
    """The loaded, compiled prompt files of one pack (the seed's prompt cache: read and parsed once)."""

    def __init__(self, sections: Iterable[PromptSection], *, max_chars: int = PromptsConfig().max_chars):
        self.sections: tuple[PromptSection, ...] = tuple(sections)
        self.max_chars = max_chars

    @classmethod
    def load(cls, pack_dir: Path, config: PromptsConfig | None = None) -> PromptSet:
        """Read and compile `<pack_dir>/<config.dir>/` in FILE_ORDER. Raises PromptError naming the file's path
        when a required file is missing or a file is not valid Jinja2; optional files that are absent are skipped."""
        config = config or PromptsConfig()
        folder = Path(pack_dir) / config.dir
        env = _environment()
        sections = []
        for name, required in FILE_ORDER:
            path = folder / name
            if not path.is_file():
                if required:
                    raise PromptError(f"required prompt file missing: {path}")
                continue
            try:
                template = env.from_string(path.read_text(encoding="utf-8"))
            except jinja2.TemplateSyntaxError as exc:
                raise PromptError(f"{path}: line {exc.lineno}: {exc.message}") from exc
            sections.append(PromptSection(name, path, template))
        return cls(sections, max_chars=config.max_chars)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.sections]

    def render(
        self,
        *,
        catalog: Iterable[Mapping[str, Any]],
        now: datetime,
        user_profile: Mapping[str, Any] | None = None,
        capabilities: str = "",
        zone: str | tzinfo | None = None,
        only: Collection[str] | None = None,
    ) -> str:
        """The system prompt: each section rendered, stripped, and joined in load order with a blank line
        (a section that renders empty is left out). `only`: the file names to render (all when None).

        Variables: `catalog` (list of intent dicts, see `catalog_of`; plain dicts need only id and label, the
        other keys get defaults), `user_profile` (dict, empty when None), `now` (the formatted local time, see
        `format_now`), `now_iso` (the same instant as ISO 8601 in that zone), `capabilities` (free text, may be
        empty). `now` must be tz-aware; it is shown in `zone`, else `user_profile["timezone"]`, else its own zone.
        Raises PromptError naming the file for an unknown variable or a prompt over `max_chars`."""
        if now.tzinfo is None or now.utcoffset() is None:
            raise PromptError("now must be a tz-aware datetime")
        profile = dict(user_profile or {})
        local_zone = _zone(zone if zone is not None else profile.get("timezone"), now)
        variables = {
            "catalog": [_catalog_entry(entry) for entry in catalog],
            "user_profile": profile,
            "now": format_now(now, local_zone),
            "now_iso": now.astimezone(local_zone).isoformat(timespec="minutes"),
            "capabilities": capabilities or "",
        }
        parts = []
        for section in self.sections:
            if only is not None and section.name not in only:
                continue
            try:
                text = section.template.render(**variables).strip()
            except jinja2.UndefinedError as exc:
                raise PromptError(f"{section.path}: unknown variable: {exc.message}") from exc
            if text:
                parts.append(text)
        prompt = "\n\n".join(parts)
        if len(prompt) > self.max_chars:
            raise PromptError(
                f"system prompt of {len(prompt)} chars exceeds max_chars={self.max_chars} "
                f"({', '.join(str(s.path) for s in self.sections)})"
            )
        return prompt


def _zone(zone: str | tzinfo | None, now: datetime) -> tzinfo:
    if zone is None or zone == "":
        return now.tzinfo  # type: ignore[return-value]  # checked tz-aware by the caller
    if isinstance(zone, tzinfo):
        return zone
    try:
        return ZoneInfo(str(zone))
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise PromptError(f"unknown time zone: {zone!r}") from exc


def _catalog_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    # a full shape lets the templates test `intent.agent` or `slot.required` without StrictUndefined firing
    if "id" not in entry or "label" not in entry:
        raise PromptError(f"catalog entry needs an id and a label: {dict(entry)!r}")
    slots = [
        {"name": s["name"], "type": s.get("type", "text"), "required": bool(s.get("required", True))}
        for s in entry.get("slots") or []
    ]
    return {
        "domain": "",
        "description": "",
        "agent": None,
        "action": None,
        "confirm": False,
        **dict(entry),
        "slots": slots,
    }
