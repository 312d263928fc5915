"""Context compaction: the tail is kept, the budget holds, the summarizer is used when it answers and the
extractive summary when it fails, times out or is absent."""

from __future__ import annotations

import asyncio

from engine.llm.compaction import SUMMARY_PREFIX, CompactionConfig, ContextCompactor, extractive_summary, length

PROMPT = {"role": "system", "content": "你是车载助手。" * 5}


def conversation(turns: int) -> list[dict]:
    messages = [PROMPT]
    for n in range(turns):
        messages.append({"role": "user", "content": f"第{n}个请求：把空调调到{20 + n}度。然后打开车窗，谢谢"})
        messages.append({"role": "assistant", "content": f"好的，已把空调调到{20 + n}度，车窗也打开了。"})
    return messages


def compactor(summarizer=None, **config) -> ContextCompactor:
    options = {"max_chars": 200, "keep_recent": 2, "summary_max_chars": 120, "summarizer_timeout_s": 0.05, **config}
    return ContextCompactor(CompactionConfig(**options), summarizer)


async def test_messages_within_budget_come_back_unchanged():
    messages = conversation(1)
    result = await compactor().compact(messages, max_chars=10_000)
    assert result.messages == messages and result.source == "none" and not result.over_budget


async def test_the_summarizer_folds_the_middle_and_the_tail_and_prompt_are_kept():
    messages = conversation(6)
    seen = {}

    async def summarize(middle, max_chars):
        seen["middle"], seen["max_chars"] = middle, max_chars
        return "用户调过几次空调温度并打开了车窗。"

    result = await compactor(summarize).compact(messages)
    assert result.source == "summarizer"
    assert result.messages[0] == PROMPT
    assert result.messages[1] == {"role": "system", "content": SUMMARY_PREFIX + "用户调过几次空调温度并打开了车窗。"}
    assert result.messages[2:] == messages[-2:]
    assert seen["middle"] == messages[1:-2]
    assert result.chars == length(result.messages) <= 200 and not result.over_budget
    assert seen["max_chars"] <= 120 - len(SUMMARY_PREFIX)


async def test_a_too_long_summary_is_cut_to_the_budget():
    async def verbose(middle, max_chars):
        return "很长的摘要" * 100

    result = await compactor(verbose).compact(conversation(6))
    assert result.source == "summarizer" and result.chars <= 200
    assert result.messages[1]["content"].endswith("…")


async def test_a_failing_summarizer_falls_back_to_the_extractive_summary():
    async def broken(middle, max_chars):
        raise RuntimeError("model down")

    messages = conversation(6)
    result = await compactor(broken).compact(messages)
    assert result.source == "extractive"
    assert result.messages[1]["content"].startswith(SUMMARY_PREFIX + "用户说过：")
    assert result.messages[2:] == messages[-2:] and result.chars <= 200


async def test_a_slow_summarizer_times_out_into_the_extractive_summary():
    async def slow(middle, max_chars):
        await asyncio.sleep(5)
        return "too late"

    result = await compactor(slow).compact(conversation(6))
    assert result.source == "extractive" and "too late" not in str(result.messages)


async def test_an_empty_answer_falls_back_too():
    async def empty(middle, max_chars):
        return "  "

    assert (await compactor(empty).compact(conversation(6))).source == "extractive"


async def test_without_a_summarizer_the_summary_quotes_only_what_users_said():
    messages = conversation(10)
    result = await compactor(max_chars=400, summary_max_chars=400).compact(messages)
    summary = result.messages[1]["content"]
    assert result.source == "extractive"
    # the first sentence of each folded user message, in order; nothing from the assistant
    expected = "；".join(f"第{n}个请求：把空调调到{20 + n}度" for n in range(9))
    assert summary == SUMMARY_PREFIX + "用户说过：" + expected
    assert "已把空调" not in summary and result.chars <= 400


def test_the_extractive_summary_keeps_the_latest_when_not_all_fit():
    messages = [{"role": "user", "content": f"请求{n}号内容。后面的话"} for n in range(10)]
    summary = extractive_summary(messages, 30)
    assert len(summary) <= 30 and summary.startswith("用户说过：")
    assert summary.endswith("请求9号内容") and "请求0号" not in summary
    assert extractive_summary(messages, 3) == ""
    assert extractive_summary([{"role": "assistant", "content": "好的"}], 100) == ""


async def test_an_earlier_summary_is_carried_into_the_next_one():
    first = await compactor(max_chars=250, summary_max_chars=400).compact(conversation(6))
    assert first.source == "extractive" and "第0个请求" in first.messages[1]["content"]
    later = first.messages + [
        {"role": "user", "content": "再把座椅加热打开。"},
        {"role": "assistant", "content": "好的，座椅加热已打开。"},
        {"role": "user", "content": "谢谢"},
        {"role": "assistant", "content": "不客气"},
    ]
    second = await compactor(max_chars=250, summary_max_chars=400).compact(
        later + [{"role": "user", "content": "长" * 100}]
    )
    summary = second.messages[1]["content"]
    assert summary.count(SUMMARY_PREFIX) == 1 and summary.count("用户说过：") == 1
    assert second.source == "extractive"
    assert "再把座椅加热打开" in summary and "第4个请求" in summary and "第0个请求" in summary
    assert second.messages[0] == PROMPT and second.chars <= 250


async def test_the_tail_is_never_dropped_even_over_budget():
    messages = conversation(3)
    messages[-1] = {"role": "assistant", "content": "长" * 500}
    result = await compactor().compact(messages)
    assert result.messages[-2:] == messages[-2:]
    assert result.over_budget and result.source == "dropped"
    assert result.messages == [PROMPT] + messages[-2:]


async def test_nothing_to_fold_returns_the_messages_as_they_are():
    messages = [PROMPT, {"role": "user", "content": "长" * 500}]
    result = await compactor().compact(messages)
    assert result.messages == messages and result.over_budget and result.source == "none"


async def test_without_pinning_the_system_message_is_folded_too():
    messages = conversation(6)
    result = await compactor(pin_system=False).compact(messages)
    assert result.messages[0]["content"].startswith(SUMMARY_PREFIX) and result.messages[1:] == messages[-2:]


async def test_the_input_is_not_modified():
    messages = conversation(6)
    before = [dict(m) for m in messages]
    await compactor().compact(messages)
    assert messages == before
