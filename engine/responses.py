"""Response policy (seed 003 §24): every user-facing sentence is rendered from the pack's templates."""

from __future__ import annotations

import re
from typing import Any

from engine.pack import Intent, Pack, SlotSpec
from engine.plugins import PluginResult


class _Blank(dict[str, Any]):
    def __missing__(self, key: str) -> str:
        return ""


def render(template: str, **values: Any) -> str:
    return template.format_map(_Blank({k: _display(v) for k, v in values.items()}))


def _display(value: Any) -> Any:
    if isinstance(value, dict) and "text" in value:
        return value["text"]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


class ResponsePolicy:
    def __init__(self, pack: Pack) -> None:
        self._t = pack.responses
        self._pack = pack

    def _say(self, key: str, **values: Any) -> str:
        return render(self._t.get(key, ""), **values)

    def ask_slot(self, slot: SlotSpec) -> str:
        return self._say("ask_slot", ask=slot.ask) if slot.ask else self._say("ask_slot_default", slot=slot.name)

    def clarify(self, intent_ids: list[str]) -> str:
        labels = [i.label for i in map(self._pack.intent, intent_ids) if i]
        return self._say("clarify", options="还是".join(labels))

    def done(self, intent: Intent, slots: dict[str, Any], result: PluginResult) -> str:
        if not result.success:
            return self._say("plugin_failed", label=intent.label, message=result.message)
        if intent.reply and result.changed:
            return render(intent.reply, **{**slots, **result.data})
        return f"好的，{result.message}。"

    def decided(self, intent: Intent | None, labels: list[str] | None = None, agents: list[str] | None = None) -> str:
        if intent and not intent.agent and intent.reply:
            return render(intent.reply)  # nobody to hand over to: the intent's own words (e.g. emotion support)
        label = "、".join(labels) if labels else (intent.label if intent else "")
        named = agents if agents is not None else ([intent.agent] if intent and intent.agent else [])
        agent = "、".join(dict.fromkeys(a for a in named if a))
        if not agent and "decided_local" in self._t:
            return self._say("decided_local", label=label)
        return self._say("decided", label=label, agent=agent)

    def confirm(self, intent: Intent, slots: dict[str, Any]) -> str:
        return self._say("confirm", label=render(intent.label, **slots), **slots)

    def pending_hint(self, intent: Intent | None, waiting: str) -> str:
        return self._say("pending_hint", label=intent.label, waiting=waiting) if intent else ""

    def social(self, category: str) -> str:
        return self._say(f"social_{category}") or self._say("social_chitchat")

    def workflow_summary(self, done: list[str], notes: list[str]) -> str:
        """One natural sentence for a finished workflow (seed 003 §24.2: 好，车窗已经打开了，空调也调到 22 度了。):
        each step's result spoken as a clause, the later ones with 也, then what was skipped or failed."""
        parts = [_spoken(m, later=n > 0) for n, m in enumerate(done)]
        head = ("好，" + "，".join(parts) + "。") if parts else ""
        return head + "".join(notes)

    def pipeline_description(self, labels: list[str]) -> str:
        """先{a}，再{b}(，最后{c})。 — what the turn will do, in order."""
        if len(labels) == 1:
            return f"{labels[0]}。"
        middle = "".join(f"，再{x}" for x in labels[1:-1])
        last = f"，{'最后' if len(labels) > 2 else '再'}{labels[-1]}"
        return f"先{labels[0]}{middle}{last}。"

    def simple(self, key: str, **values: Any) -> str:
        """reject, fallback, stopped, confirm_cancelled: templates that need at most a label."""
        return self._say(key, **values)


_DONE = re.compile(r"^(?P<what>.+?)已(?:经)?(?P<how>.+?)了?$")


def _spoken(message: str, *, later: bool) -> str:
    """车窗已打开 -> 车窗已经打开了 (first) / 车窗也打开了 (later)."""
    m = _DONE.match(message.strip("。！!"))
    if not m:
        return message.strip("。！!")
    return f"{m['what']}{'也' if later else '已经'}{m['how']}了"
