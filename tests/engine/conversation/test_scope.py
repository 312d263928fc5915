"""Scope resolution: which of the candidates in the range the words name."""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta, timezone

from engine.conversation.scope import reference_words, resolve
from protocol.agents import CandidateItem

TZ = timezone(timedelta(hours=8))
AT = datetime(2026, 12, 2, 15, tzinfo=TZ)


def item(title: str, hour: int = 15) -> CandidateItem:
    start = AT.replace(hour=hour)
    return CandidateItem(
        id=uuid.uuid4(), title=title, item_type="schedule", start_at=start, end_at=start + timedelta(hours=1)
    )


def test_no_candidates_is_not_found():
    assert resolve("把明天的会删了", "明天", [], allow_range=False).decision == "not_found"


def test_the_title_named_picks_one_item_among_several():
    meeting, gym = item("开会"), item("健身", 18)
    result = resolve("把明天的开会删了", "明天", [meeting, gym], allow_range=False)
    assert (result.decision, result.resolved_item_id) == ("single", meeting.id)


def test_two_items_the_words_name_equally_are_ambiguous():
    a, b = item("组会"), item("组会", 17)
    result = resolve("明天的组会改到后天", "明天", [a, b], allow_range=False)
    assert result.decision == "ambiguous"
    assert set(result.resolved_item_ids) == {a.id, b.id}
    assert result.question_text


def test_words_naming_nothing_among_several_are_ambiguous_over_all():
    a, b = item("开会"), item("健身", 18)
    result = resolve("把明天那个删了", "明天", [a, b], allow_range=False)
    assert result.decision == "ambiguous" and set(result.resolved_item_ids) == {a.id, b.id}


def test_the_only_item_in_the_range_is_single_even_unnamed():
    only = item("牙医复诊")
    assert resolve("把明天的安排删掉", "明天", [only], allow_range=False).resolved_item_id == only.id


def test_range_functions_get_every_item_or_the_named_ones():
    a, b = item("开会"), item("健身", 18)
    assert resolve("明天有什么安排", "明天", [a, b], allow_range=True).decision == "range"
    assert resolve("明天有什么安排", "明天", [a, b], allow_range=True).resolved_item_ids == [a.id, b.id]
    assert resolve("明天的健身几点", "明天", [a, b], allow_range=True).resolved_item_ids == [b.id]


def test_reference_words_drop_the_time_and_the_command():
    assert reference_words("帮我把明天的开会删掉", "明天").split() == ["开会"]


def test_a_move_names_its_item_before_the_marker():
    assert reference_words("把明天的组会改到后天上午十点", None).split() == ["明天", "组会"]
