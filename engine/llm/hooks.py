"""The hook chain around each LLM call (seed 004's hooks system): before-hooks run in order on the outgoing
messages, after-hooks run in reverse order on the response, like nested middleware (the first hook sees the
request first and the response last).

A chain is built from config, a list of {name, options} naming registered hooks; the built-ins are `trace_id`,
`redact` and `log`. An unknown name or bad options is a config error that names the hook.
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from config.llm import HooksConfig, HookSpec

logger = logging.getLogger(__name__)


class HookError(ValueError):
    """A hook config names an unknown hook or gives it invalid options; the message names the hook."""


@dataclass
class HookContext:
    """What one LLM call carries through the chain. Hooks may replace `messages` (a list of {role, content}),
    write `metadata`, and, after the call, rewrite `response` (None before the call)."""

    messages: list[dict[str, Any]]
    metadata: dict[str, Any] = field(default_factory=dict)
    response: str | None = None
    trace_id: str | None = None


@runtime_checkable
class Hook(Protocol):
    async def before_llm_call(self, ctx: HookContext) -> None: ...

    async def after_llm_call(self, ctx: HookContext) -> None: ...


class HookChain:
    """Hooks around an LLM call: `before` runs them in order, `after` in reverse order."""

    def __init__(self, hooks: Iterable[Hook]):
        self.hooks: tuple[Hook, ...] = tuple(hooks)

    async def before(self, ctx: HookContext) -> None:
        for hook in self.hooks:
            await hook.before_llm_call(ctx)

    async def after(self, ctx: HookContext) -> None:
        for hook in reversed(self.hooks):
            await hook.after_llm_call(ctx)

    async def call(self, ctx: HookContext, llm: Callable[[list[dict[str, Any]]], Awaitable[str]]) -> str:
        """Run the before-hooks, `await llm(ctx.messages)`, store its answer in `ctx.response`, run the
        after-hooks and return the (possibly rewritten) response. An exception from `llm` propagates and the
        after-hooks do not run: there is no response for them to see."""
        await self.before(ctx)
        ctx.response = await llm(ctx.messages)
        await self.after(ctx)
        return ctx.response or ""


# -- config --------------------------------------------------------------------------------------------------


HookFactory = Callable[[BaseModel], Hook]
# name -> (options model, factory from validated options)
_REGISTRY: dict[str, tuple[type[BaseModel], HookFactory]] = {}


def register(name: str, options: type[BaseModel], factory: HookFactory) -> None:
    """Make `name` usable in config: `options` validates its options, `factory(options)` builds the hook."""
    _REGISTRY[name] = (options, factory)


def registered() -> list[str]:
    return sorted(_REGISTRY)


def _options(spec: HookSpec) -> BaseModel:
    if spec.name not in _REGISTRY:
        raise HookError(f"unknown hook {spec.name!r} (known: {', '.join(registered())})")
    model, _ = _REGISTRY[spec.name]
    try:
        return model.model_validate(spec.options)
    except ValidationError as exc:
        raise HookError(f"hook {spec.name!r}: invalid options: {exc}") from exc


def build_chain(config: HooksConfig | Iterable[HookSpec | Mapping[str, Any]]) -> HookChain:
    """A HookChain from config: a HooksConfig or a plain list like [{"name": "redact", "options": {...}}].
    Raises HookError naming an unknown hook or one with invalid options."""
    specs = (
        config.chain
        if isinstance(config, HooksConfig)
        else [spec if isinstance(spec, HookSpec) else _spec(spec) for spec in config]
    )
    hooks = []
    for spec in specs:
        options = _options(spec)
        hooks.append(_REGISTRY[spec.name][1](options))
    return HookChain(hooks)


def _spec(raw: Mapping[str, Any]) -> HookSpec:
    try:
        return HookSpec.model_validate(raw)
    except ValidationError as exc:
        raise HookError(f"hook config {dict(raw)!r}: {exc}") from exc


# -- built-ins -----------------------------------------------------------------------------------------------


class _NoOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TraceIdHook:
    """Gives the call a trace id (uuid4 hex) unless it already has one, so every later hook and log can cite it."""

    async def before_llm_call(self, ctx: HookContext) -> None:
        if not ctx.trace_id:
            ctx.trace_id = uuid.uuid4().hex

    async def after_llm_call(self, ctx: HookContext) -> None:
        return None


# Order matters: an ID-card number contains 11-digit runs that could pass for a mobile number, so it goes first.
# The lookarounds keep a pattern from matching inside a longer run of digits (an order number, say).
BuiltinPattern = Literal["id_card", "mobile", "email"]
BUILTIN_PATTERNS: dict[BuiltinPattern, tuple[str, str]] = {
    "id_card": (
        r"(?<![0-9A-Za-z])[1-9][0-9]{5}(?:18|19|20)[0-9]{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12][0-9]|3[01])"
        r"[0-9]{3}[0-9Xx](?![0-9A-Za-z])",
        "[身份证号]",
    ),
    "mobile": (r"(?<![0-9])(?:\+?86[- ]?)?1[3-9][0-9](?:[- ]?[0-9]{4}){2}(?![0-9])", "[手机号]"),
    "email": (r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}", "[邮箱]"),
}


class RedactPattern(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    pattern: str
    placeholder: str = "[已隐藏]"

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"bad regex {value!r}: {exc}") from exc
        return value


class RedactOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    builtins: list[BuiltinPattern] = Field(
        default_factory=lambda: list(BUILTIN_PATTERNS), description="Which built-in patterns apply, in this order."
    )
    patterns: list[RedactPattern | str] = Field(
        default_factory=list, description="Extra patterns, applied after the built-ins; a bare string gets [已隐藏]."
    )


class RedactHook:
    """Replaces personal data (ID-card numbers, mainland mobile numbers, emails, plus configured patterns) with
    placeholders such as [手机号] in the outgoing messages and in the response. The messages are replaced by
    redacted copies: the caller's own list and dicts (the conversation history) are left as they were."""

    def __init__(self, options: RedactOptions | None = None):
        options = options or RedactOptions()
        rules = [BUILTIN_PATTERNS[name] for name in options.builtins]
        rules += [(p, "[已隐藏]") if isinstance(p, str) else (p.pattern, p.placeholder) for p in options.patterns]
        self._rules = [(re.compile(pattern), placeholder) for pattern, placeholder in rules]

    def redact(self, text: str) -> str:
        for pattern, placeholder in self._rules:
            text = pattern.sub(placeholder, text)
        return text

    async def before_llm_call(self, ctx: HookContext) -> None:
        ctx.messages = [
            {**m, "content": self.redact(m["content"])} if isinstance(m.get("content"), str) else dict(m)
            for m in ctx.messages
        ]

    async def after_llm_call(self, ctx: HookContext) -> None:
        if ctx.response:
            ctx.response = self.redact(ctx.response)


class LogOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    logger: str = Field(default=__name__, description="Logger name the lines go to (at DEBUG).")


class LogHook:
    """Logs each call at DEBUG: trace id, message count and characters, then the response length. Never the
    content: it may hold what the redact hook exists to keep out of logs."""

    def __init__(self, options: LogOptions | None = None):
        self._log = logging.getLogger((options or LogOptions()).logger)

    async def before_llm_call(self, ctx: HookContext) -> None:
        chars = sum(len(m["content"]) for m in ctx.messages if isinstance(m.get("content"), str))
        self._log.debug("llm call trace=%s messages=%d chars=%d", ctx.trace_id, len(ctx.messages), chars)

    async def after_llm_call(self, ctx: HookContext) -> None:
        self._log.debug("llm reply trace=%s response_chars=%d", ctx.trace_id, len(ctx.response or ""))


register("trace_id", _NoOptions, lambda _: TraceIdHook())
register("redact", RedactOptions, lambda options: RedactHook(options))  # type: ignore[arg-type]
register("log", LogOptions, lambda options: LogHook(options))  # type: ignore[arg-type]
