"""KeywordMatcher, SocialRouter and the stop/confirmation rules over the real packs."""

from __future__ import annotations

import pytest

from engine.dialog_rules import DialogRules
from engine.keyword import KeywordMatcher
from engine.social import SocialRouter
from tests.support.fakes import pack

COCKPIT = pack("cockpit")
TIMEFLOW = pack("timeflow")
KEYWORDS = KeywordMatcher(COCKPIT)
SOCIAL = SocialRouter(COCKPIT.rules, KEYWORDS)
RULES = DialogRules(COCKPIT.rules)
TF_RULES = DialogRules(TIMEFLOW.rules)


def hits(text: str) -> list[tuple[str, float]]:
    return [(c.intent, c.score) for c in KEYWORDS.match(text)]


# --------------------------------------------------------------------------- keywords


def test_single_keyword_hit_scores_one() -> None:
    assert hits("打开车窗") == [("cabin_window_open", 1.0)]
    assert hits("帮我把车窗关上吧")[0][0] == "cabin_window_close"
    assert hits("请帮我关窗") == [("cabin_window_close", 1.0)]


def test_no_keyword_means_no_candidates() -> None:
    assert hits("今天天气怎么样") == []
    assert hits("导航") == []
    assert KEYWORDS.hits("今天天气怎么样") is False
    assert KEYWORDS.hits("帮我打开车窗") is True


def test_shorter_keyword_scores_by_length_share() -> None:
    # 查询订单 (4 chars) vs 物流 (2 chars)
    assert hits("查询订单物流") == [("cs_query_order", 1.0), ("cs_query_logistics", 0.5)]


def test_intent_keeps_its_longest_matching_keyword() -> None:
    # 取消订单 and 取消这个订单 both belong to cs_cancel_order; 订单信息 (4) to cs_query_order
    assert hits("取消这个订单信息") == [("cs_cancel_order", 1.0), ("cs_query_order", round(4 / 6, 4))]


def test_equal_length_hits_tie_at_one() -> None:
    assert sorted(hits("打开车窗然后播放音乐")) == [("cabin_play_music", 1.0), ("cabin_window_open", 1.0)]


def test_timeflow_keywords() -> None:
    assert [c.intent for c in KeywordMatcher(TIMEFLOW).match("明天下午三点提醒我开会")] == ["schedule_create"]
    assert KeywordMatcher(TIMEFLOW).match("打开车窗") == []


@pytest.mark.parametrize(
    "text, expected",
    [
        ("不用提醒我挪车了，删了呗", ["schedule_delete"]),  # 提醒我 taken back: only the deletion is asked
        ("不要再提醒我喝水了", []),
        ("记得提醒我别迟到", ["schedule_create"]),  # the negation follows the keyword: it is the reminder's content
        ("明天下午三点提醒我开会", ["schedule_create"]),
    ],
)
def test_a_keyword_right_after_a_negation_is_no_hit(text, expected) -> None:
    assert [c.intent for c in KeywordMatcher(TIMEFLOW).match(text)] == expected


def test_a_keyword_inside_a_negated_one_is_no_hit_either() -> None:
    assert hits("别打开空调") == []  # neither 打开空调 nor the 开空调 inside it
    assert [i for i, _ in hits("打开空调，别开车窗")] == ["cabin_ac_on"]
    assert KeywordMatcher(COCKPIT).spans("先关车窗，别打开空调") == KeywordMatcher(COCKPIT).spans("先关车窗")


def test_special_intents_have_no_keywords() -> None:
    assert all(i not in {"__social__", "__out_of_scope__"} for _, i in KEYWORDS._keywords)


# --------------------------------------------------------------------------- social


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("你好", "greeting"),
        ("你好！", "greeting"),
        ("  您好呀  ", "greeting"),
        ("Hello", "greeting"),
        ("谢谢你", "thanks"),
        ("再见啦", "bye"),
        ("你能做什么", "capability"),
        ("你是谁", "capability"),
    ],
)
def test_social_categories(text: str, category: str) -> None:
    assert SOCIAL.route(text) == category


@pytest.mark.parametrize(
    "text",
    [
        "你好，帮我打开车窗",
        "你好啊帮我查订单",
        "谢谢，再帮我开空调",
        "打开车窗",
        "",
        "  ",
        "今天天气怎么样",
        "你会做什么？先帮我打开车窗",
        "你是谁，帮我开空调",
    ],
)
def test_task_or_empty_text_is_not_social(text: str) -> None:
    assert SOCIAL.route(text) is None


def test_every_social_category_has_a_reply_template() -> None:
    for p in (COCKPIT, TIMEFLOW):
        for category in p.rules.social_patterns:
            assert p.responses.get(f"social_{category}"), (p.name, category)


# --------------------------------------------------------------------------- stop / confirmation rules


@pytest.mark.parametrize("word", COCKPIT.rules.stop_words)
def test_every_configured_stop_word_stops(word: str) -> None:
    assert RULES.is_stop(word), f"configured stop word {word!r} is not recognised"


@pytest.mark.parametrize("word", TIMEFLOW.rules.stop_words)
def test_every_timeflow_stop_word_stops(word: str) -> None:
    assert TF_RULES.is_stop(word), f"configured stop word {word!r} is not recognised"


@pytest.mark.parametrize("text", ["停止。", "停一下吧", "结束这次操作！"])
def test_stop_word_with_punctuation_or_particles(text: str) -> None:
    assert RULES.is_stop(text)


@pytest.mark.parametrize("text", ["暂停一下这首歌", "停止导航然后打开车窗", "帮我打开车窗"])
def test_commands_containing_stop_words_are_not_stops(text: str) -> None:
    assert not RULES.is_stop(text)


@pytest.mark.parametrize(
    ("text", "answer"),
    [
        ("确认", True),
        ("确定", True),
        ("好的", True),
        ("是的，确认", True),
        ("不要", False),
        ("不用了", False),
        ("算了", False),
        ("别", False),
        ("不确认", False),
        ("明天再说吧", None),
        ("帮我打开车窗然后播放音乐", None),
    ],
)
def test_confirmation_answers(text: str, answer: bool | None) -> None:
    assert RULES.confirmation(text) is answer
