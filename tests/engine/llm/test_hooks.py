"""The hook chain: order, built-ins (trace id, redaction, log) and config errors."""

from __future__ import annotations

import logging

import pytest
from pydantic import ValidationError

from engine.llm.hooks import (
    Hook,
    HookChain,
    HookContext,
    HookError,
    HooksConfig,
    RedactHook,
    RedactOptions,
    build_chain,
)


class Recorder:
    def __init__(self, name: str, events: list[str]):
        self.name, self.events = name, events

    async def before_llm_call(self, ctx: HookContext) -> None:
        self.events.append(f"before:{self.name}")

    async def after_llm_call(self, ctx: HookContext) -> None:
        self.events.append(f"after:{self.name}")


def context(*contents: str) -> HookContext:
    return HookContext(messages=[{"role": "user", "content": c} for c in contents])


async def test_before_hooks_run_in_order_and_after_hooks_in_reverse():
    events: list[str] = []
    chain = HookChain([Recorder("a", events), Recorder("b", events), Recorder("c", events)])

    async def llm(messages):
        events.append("llm")
        return "好的"

    assert await chain.call(context("你好"), llm) == "好的"
    assert events == ["before:a", "before:b", "before:c", "llm", "after:c", "after:b", "after:a"]


async def test_after_hooks_do_not_run_when_the_call_fails():
    events: list[str] = []
    chain = HookChain([Recorder("a", events)])

    async def llm(messages):
        raise RuntimeError("model down")

    with pytest.raises(RuntimeError):
        await chain.call(context("你好"), llm)
    assert events == ["before:a"]


def test_the_recorder_and_builtins_satisfy_the_protocol():
    assert isinstance(Recorder("a", []), Hook)
    assert all(
        isinstance(h, Hook) for h in build_chain([{"name": "trace_id"}, {"name": "redact"}, {"name": "log"}]).hooks
    )


async def test_trace_id_is_set_once_and_kept_when_present():
    chain = build_chain([{"name": "trace_id"}])
    ctx = context("x")
    await chain.before(ctx)
    assert ctx.trace_id and len(ctx.trace_id) == 32 and int(ctx.trace_id, 16) >= 0
    first = ctx.trace_id
    await chain.before(ctx)
    assert ctx.trace_id == first
    given = HookContext(messages=[], trace_id="abc")
    await chain.before(given)
    assert given.trace_id == "abc"


async def test_redact_replaces_personal_data_in_messages_and_response_without_touching_the_history():
    history = [
        {"role": "system", "content": "你是助手"},
        {
            "role": "user",
            "content": "我的手机号是13812345678，邮箱 zhang.san@example.com.cn，"
            "身份证 11010519491231002X，订单号 202612010001234567",
        },
    ]
    ctx = HookContext(messages=history)
    chain = build_chain([{"name": "redact"}])
    await chain.before(ctx)
    sent = ctx.messages[1]["content"]
    assert sent == "我的手机号是[手机号]，邮箱 [邮箱]，身份证 [身份证号]，订单号 202612010001234567"
    assert history[1]["content"].startswith("我的手机号是13812345678")  # the caller's copy is untouched
    assert ctx.messages[0] == history[0]
    ctx.response = "已记下 139-1234-5678 和 +86 13712345678"
    await chain.after(ctx)
    assert ctx.response == "已记下 [手机号] 和 [手机号]"


def test_redact_leaves_longer_digit_runs_and_non_mobile_numbers_alone():
    hook = RedactHook()
    assert hook.redact("订单 2138123456789 金额 12345678901") == "订单 2138123456789 金额 12345678901"
    assert hook.redact("打给13912345678吧") == "打给[手机号]吧"


async def test_redact_options_add_patterns_and_choose_builtins():
    chain = build_chain(
        [
            {
                "name": "redact",
                "options": {
                    "builtins": ["email"],
                    "patterns": ["车牌[A-Z0-9]{5}", {"pattern": r"\d{6}号", "placeholder": "[门牌]"}],
                },
            }
        ]
    )
    ctx = context("车牌AB123，住102003号，电话13812345678，a@b.cn")
    await chain.before(ctx)
    assert ctx.messages[0]["content"] == "[已隐藏]，住[门牌]，电话13812345678，[邮箱]"


def test_redact_options_reject_a_bad_regex():
    with pytest.raises(ValidationError, match="bad regex"):
        RedactOptions(patterns=[{"pattern": "([未闭合"}])


async def test_log_hook_logs_counts_at_debug_not_content(caplog):
    chain = build_chain([{"name": "trace_id"}, {"name": "log", "options": {"logger": "test.llm"}}])
    ctx = context("你好", "打开车窗")
    with caplog.at_level(logging.DEBUG, logger="test.llm"):
        await chain.call(ctx, _answer("好的，已打开"))
    lines = [r for r in caplog.records if r.name == "test.llm"]
    assert [r.levelno for r in lines] == [logging.DEBUG, logging.DEBUG]
    assert "messages=2 chars=6" in lines[0].getMessage() and ctx.trace_id in lines[0].getMessage()
    assert "response_chars=6" in lines[1].getMessage()
    assert all("车窗" not in r.getMessage() for r in lines)


def _answer(text: str):
    async def llm(messages):
        return text

    return llm


def test_an_unknown_hook_name_is_an_error_naming_it():
    with pytest.raises(HookError, match="'trace'") as caught:
        build_chain([{"name": "trace_id"}, {"name": "trace"}])
    assert "trace_id" in str(caught.value)  # and lists the known ones
    with pytest.raises(HookError, match="unknown hook 'redactor'"):
        build_chain(HooksConfig.model_validate({"chain": [{"name": "redactor"}]}))


def test_bad_options_are_an_error_naming_the_hook():
    with pytest.raises(HookError, match="'trace_id'"):
        build_chain([{"name": "trace_id", "options": {"prefix": "x"}}])
    with pytest.raises(HookError, match="'redact'"):
        build_chain(HooksConfig.model_validate({"chain": [{"name": "redact", "options": {"builtins": ["passport"]}}]}))


def test_a_config_builds_the_chain_in_its_order():
    config = HooksConfig.model_validate({"chain": [{"name": "trace_id"}, {"name": "redact"}, {"name": "log"}]})
    assert [type(h).__name__ for h in build_chain(config).hooks] == ["TraceIdHook", "RedactHook", "LogHook"]
    assert build_chain(HooksConfig()).hooks == ()
