"""The one clause split of a turn (shared by the encoder call and the detector)."""

from __future__ import annotations

from engine.clauses import ClauseSplitter
from tests.support.fakes import base_settings

SPLIT = ClauseSplitter(base_settings().clauses)


def test_punctuation_and_joiners_split_clauses():
    assert SPLIT.clauses("打开车窗然后播放音乐") == ["打开车窗", "播放音乐"]
    assert SPLIT.clauses("把天窗打开，顺便把音量调小") == ["把天窗打开", "把音量调小"]
    assert SPLIT.extra("打开车窗；关闭空调。") == ("打开车窗", "关闭空调")


def test_a_single_clause_is_its_own_clause_and_adds_nothing_to_embed():
    assert SPLIT.clauses("把空调调到二十二度") == ["把空调调到二十二度"]
    assert SPLIT.extra("把空调调到二十二度") == ()


def test_fragments_too_short_are_not_clauses():
    assert SPLIT.clauses("嗯，打开车窗") == ["打开车窗"]
    assert SPLIT.extra("嗯，打开车窗") == ()


def test_haiyou_joins_requests_but_not_a_question_about_what_is_left():
    assert SPLIT.clauses("打开空调还有把车窗关上") == ["打开空调", "把车窗关上"]
    assert SPLIT.clauses("下午四点后我还有啥安排") == ["下午四点后我还有啥安排"]
    assert SPLIT.clauses("今晚还有事吗") == ["今晚还有事吗"]
    assert SPLIT.clauses("离考试还有两个月") == ["离考试还有两个月"]


def test_zai_splits_two_requests_but_not_a_subject_from_its_own_request():
    assert SPLIT.clauses("关上天窗再打开雨刷") == ["关上天窗", "打开雨刷"]
    assert SPLIT.clauses("开窗再开空调") == ["开窗", "开空调"]
    assert SPLIT.clauses("空调再升高两度") == ["空调再升高两度"]
    assert SPLIT.clauses("她怕凉，空调再升高个两度") == ["她怕凉", "空调再升高个两度"]
    assert SPLIT.clauses("音量再调大点") == ["音量再调大点"]
    assert SPLIT.clauses("天窗打开，再来首歌") == ["天窗打开", "来首歌"]  # 再来 opening a clause is no "again"
