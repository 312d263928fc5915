"""replan_agent.replan: which items move, where they land (next free day, same clock, no overlaps)."""

from __future__ import annotations

from engine.agents import AgentRegistry
from protocol.write_payloads import ReplanPayload
from tests.engine.agents.agent_inputs import NOW, at, checked_action, fact, item, make_input

REGISTRY = AgentRegistry.default()

WORDS = item("背单词", start=at(12, 1, 7), end=at(12, 1, 7, 30))  # done: stays
REPORT = item("写周报", start=at(12, 1, 8), end=at(12, 1, 9), version=2)  # past, no feedback: moves
READING = item("读书", start=at(12, 1, 8, 30), end=at(12, 1, 9, 30))  # not done: moves
DENTIST = item("看牙", start=at(12, 1, 9), end=at(12, 1, 9, 30), status="cancelled")
GYM = item("健身", start=at(12, 1, 18), end=at(12, 1, 19), status="deferred", version=5)  # deferred: moves
DINNER = item("聚餐", start=at(12, 2, 18, 30), end=at(12, 2, 20))  # future: stays, blocks
CALL = item("回电话", start=at(12, 1, 9, 30), end=at(12, 1, 9, 45))  # latest feedback: completed
RENT = item("交房租", due=at(12, 1, 9))  # past deadline: moves
FEEDBACKS = [
    fact(WORDS, "completed", minutes=30),
    fact(READING, "not_completed"),
    fact(GYM, "deferred"),
    fact(CALL, "not_completed", when=at(12, 1, 9, 40)),
    fact(CALL, "completed", when=at(12, 1, 9, 50)),
]


async def replan(items, feedbacks):
    return await REGISTRY.dispatch(
        "replan_agent",
        "replan",
        make_input("今天的计划全乱了，帮我往后排一排", at(12, 1), at(12, 3), items=items, feedbacks=feedbacks),
    )


async def test_unfinished_items_move_to_the_next_free_days() -> None:
    envelope = await replan([GYM, DINNER, WORDS, REPORT, READING, DENTIST, CALL, RENT], FEEDBACKS)
    action = checked_action(envelope, ReplanPayload)
    assert action["action"] == "replan" and action["target_type"] == "task_item"
    changes = {c["task_item_id"]: c for c in action["payload"]["changes"]}
    assert set(changes) == {str(REPORT.id), str(READING.id), str(GYM.id), str(RENT.id)}
    assert changes[str(REPORT.id)] == {
        "task_item_id": str(REPORT.id),
        "base_version": 2,
        "start_at": "2026-12-02T08:00:00+08:00",
        "end_at": "2026-12-02T09:00:00+08:00",
    }
    # 12-02 08:30 would overlap the moved 写周报, so 读书 steps on to 12-03
    assert changes[str(READING.id)]["start_at"] == "2026-12-03T08:30:00+08:00"
    assert changes[str(READING.id)]["end_at"] == "2026-12-03T09:30:00+08:00"
    # 12-02 18:00 would overlap 聚餐; the deferred item is planned again
    assert changes[str(GYM.id)] == {
        "task_item_id": str(GYM.id),
        "base_version": 5,
        "start_at": "2026-12-03T18:00:00+08:00",
        "end_at": "2026-12-03T19:00:00+08:00",
        "status": "planned",
    }
    assert changes[str(RENT.id)] == {
        "task_item_id": str(RENT.id),
        "base_version": 1,
        "due_at": "2026-12-02T09:00:00+08:00",
    }
    assert action["preview_text"].splitlines() == [
        "「写周报」12月1日 08:00 → 12月2日 08:00",
        "「读书」12月1日 08:30 → 12月3日 08:30",
        "「交房租」截止 12月1日 09:00 → 12月2日 09:00",
        "「健身」12月1日 18:00 → 12月3日 18:00",
    ]
    assert action["payload"]["summary"] == "顺延 4 项未完成的安排：写周报、读书、交房租、健身"


async def test_a_later_deferred_item_moves_after_its_own_day() -> None:
    trip = item("看展", start=at(12, 5, 14), end=at(12, 5, 16))
    envelope = await replan([trip], [fact(trip, "deferred")])
    change = checked_action(envelope, ReplanPayload)["payload"]["changes"][0]
    assert change["start_at"] == "2026-12-06T14:00:00+08:00"


async def test_nothing_to_move() -> None:
    upcoming = item("开会", start=at(12, 1, 15), end=at(12, 1, 16))
    envelope = await replan([WORDS, DENTIST, upcoming], [fact(WORDS, "completed")])
    assert not envelope.isNeedUser and envelope.db_action is None and not envelope.isError
    assert envelope.result["reply"] == "这段时间没有需要调整的安排。"


async def test_a_past_item_with_a_completed_feedback_stays() -> None:
    envelope = await replan([REPORT], [fact(REPORT, "completed", when=NOW)])
    assert envelope.db_action is None
