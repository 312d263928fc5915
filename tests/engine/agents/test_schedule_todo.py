"""schedule_todo_agent: create (titles, item types, times), update, delete and query, dispatched by the registry."""

from __future__ import annotations

from datetime import datetime

import pytest

from engine.agents import AgentRegistry
from engine.agents.schedule_words import derive_title
from protocol.rest import TaskItemPayload
from tests.engine.agents.agent_inputs import NOW, at, checked_action, item, make_input

REGISTRY = AgentRegistry.default()


async def create(raw: str, start: datetime, end: datetime, **params):
    envelope = await REGISTRY.dispatch("schedule_todo_agent", "create", make_input(raw, start, end, params=params))
    action = checked_action(envelope, TaskItemPayload)
    assert action["action"] == "create" and action["target_type"] == "task_item" and "target_id" not in action
    assert envelope.isDisplayResult
    return action


@pytest.mark.parametrize(
    ("raw", "title"),
    [
        ("明天下午三点提醒我开会", "开会"),
        ("周五之前要交报告，记一下", "交报告"),
        ("后天晚上七点跟老同学吃饭，帮我记一下哈", "跟老同学吃饭"),
        ("加个待办：今晚把周报改完", "把周报改完"),
        ("下午三点到五点帮我空出来写方案", "写方案"),
        ("明天上午给我留出两个小时写代码", "写代码"),
        ("周四下午两点我有个体检", "体检"),
        ("记得提醒我一下", "日程"),
        # the request's own verb is no part of the thing: 安排 / 约 / 预约 ask for it
        ("帮我约一下周五下午去体检", "去体检"),
        ("帮我安排一个和房东见面的事，后天上午十点", "和房东见面"),
        ("找个时间去理发，周六上午", "去理发"),
        ("预约了下周二看牙", "看牙"),
        ("周六晚上约会", "约会"),
        ("约个时间去银行取钱，那就周三下午三点吧", "去银行取钱"),  # an answer's 那就…吧 is no part of it
        # the thing in the user's words: 去 and a verb's 一下 inside it stay, a leading 一次/一个 and 在 before a
        # time go, and a request that names no thing (新建一个日程) gives none of it
        ("我要去体检", "去体检"),
        ("周三下午两点跟财务核对一下报销单", "跟财务核对一下报销单"),
        ("帮我在下周一上午十点安排一个视频会议", "视频会议"),
        ("帮我预约一次理疗，周五下午四点", "理疗"),
        ("帮我新建一个日程，周日中午和同事聚餐", "和同事聚餐"),
        ("抽个时间去趟邮局，周四上午", "去趟邮局"),
        ("明天去机场送人", "去机场送人"),
        ("周四上午十点到十一点半开部门会", "开部门会"),
        # 排 asks for the thing as 安排 does (帮我排一下…); 排练 and 排队 are things
        ("帮我排一下去税务局报税，周三上午九点", "去税务局报税"),
        ("帮我排个和班主任的电话，明晚八点", "和班主任的电话"),
        ("明天下午三点排练节目", "排练节目"),
        ("周六早上排队挂号", "排队挂号"),
        # a clause that says only how long is the item's length; an answer's 定在…吧 and a bare 给我 are fillers;
        # 找时间 asks for a time; 的事 stays where it is what a talk is about; 整 belongs to the clock
        ("周五下午两点打羽毛球，打一个半小时", "打羽毛球"),
        ("明早九点去健身房，大概两个钟头吧", "去健身房"),
        ("提醒我给奶奶寄药，定在周日上午十点吧", "给奶奶寄药"),
        ("给我，周三晚上七点去看牙医", "去看牙医"),
        ("找时间去趟家具城，周六上午", "去趟家具城"),
        ("和领导聊一下加薪的事，周四下午三点", "和领导聊一下加薪的事"),
        ("周二上午十点整开周会", "开周会"),
        ("周六一早去郊区钓鱼，估计要一个上午", "去郊区钓鱼"),
        ("帮忙记下周一晚上和邻居吃饭", "和邻居吃饭"),
        ("帮我记下周二上午去交社保", "去交社保"),
        ("帮我记个事：周四上午去银行", "去银行"),
        # a clause after the thing that says how to go about it or why is no part of it; 加个事儿 names no thing
        ("周五早上八点去体检，得空腹", "去体检"),
        ("明天下午两点去面试，记得带简历", "去面试"),
        ("加个事儿，周日下午去看展", "去看展"),
        ("给我排个和律师的电话，周三上午", "和律师的电话"),
        ("帮我加一条：周日上午给花浇水", "给花浇水"),
        # 请 that treats someone stays (请表姐吃顿饭); 请 that asks goes; 回头, 想, 定个…的时间 and 留点时间 ask;
        # 要空腹 is how to go
        ("明天中午请表姐吃顿饭", "请表姐吃顿饭"),
        ("请在明天下午三点安排面试", "面试"),
        ("回头提醒我去物业交停车费", "去物业交停车费"),
        ("想找个时间陪老伴去公园转转", "陪老伴去公园转转"),
        ("帮我定个跟装修师傅碰头的时间", "跟装修师傅碰头"),
        ("帮我留点时间练口语", "练口语"),
        ("大后天早上七点去医院抽血，要空腹", "去医院抽血"),
        ("想法讨论会，周二上午十点", "想法讨论会"),
        # the title is one clause: the one said with the time, else the longest (a filler, a reason or an aside beside
        # it is no part of it)
        ("那个，后天下午两点我要去趟银行办卡，帮我记一下", "去趟银行办卡"),
        ("周五上午九点去医院复查，上次约好的", "去医院复查"),
        ("嗯……明晚八点跟老同学打电话", "跟老同学打电话"),
        ("帮我记个事儿，去邮局寄包裹，周三下午", "去邮局寄包裹"),
        ("给我加个会，周四下午三点跟设计师对稿子", "跟设计师对稿子"),
        ("下周一上午九点半和张总见面，顺便谈一下续约", "和张总见面"),
        # 开始 after the time says when it starts, and 给我留…个小时 how long: neither is part of the thing
        ("周六上午九点开始整理衣柜，给我留三个小时", "整理衣柜"),
        ("今晚七点半开始背单词", "背单词"),
    ],
)
def test_derive_title_drops_the_time_and_the_command_words(raw: str, title: str) -> None:
    assert derive_title(raw, now=NOW, tz=NOW.tzinfo)[0] == title


async def test_a_length_said_after_the_thing_ends_the_item() -> None:
    action = await create("周五下午两点打羽毛球，打一个半小时", at(12, 4, 14), at(12, 4, 15))
    assert action["payload"]["title"] == "打羽毛球"
    assert (action["payload"]["start_at"], action["payload"]["end_at"]) == (
        "2026-12-04T14:00:00+08:00",
        "2026-12-04T15:30:00+08:00",
    )
    action = await create("周六上午九点去驾校练车，练俩小时", at(12, 5, 9), at(12, 5, 10))
    assert action["payload"]["end_at"] == "2026-12-05T11:00:00+08:00"
    action = await create("明天上午开读书会，开四十分钟", at(12, 2, 8), at(12, 2, 12))
    assert action["payload"]["end_at"] == "2026-12-02T08:40:00+08:00"


async def test_create_schedule_at_a_clock_time() -> None:
    action = await create("明天下午三点提醒我开会", at(12, 2, 15), at(12, 2, 16))
    assert action["payload"] == {
        "item_type": "schedule",
        "title": "开会",
        "status": "planned",
        "start_at": "2026-12-02T15:00:00+08:00",
        "end_at": "2026-12-02T16:00:00+08:00",
    }
    assert action["preview_text"] == "新建日程：明天 15:00–16:00 开会"


async def test_a_point_in_time_lasts_an_hour() -> None:
    action = await create("下周三上午十点半部门例会", at(12, 9, 10, 30), at(12, 9, 10, 30))
    assert action["payload"]["title"] == "部门例会"
    assert action["payload"]["end_at"] == "2026-12-09T11:30:00+08:00"
    assert action["preview_text"] == "新建日程：12月9日 10:30–11:30 部门例会"


async def test_a_deadline_day_makes_a_todo_due_at_the_days_end() -> None:
    action = await create("周五之前要交报告，记一下", at(12, 4), at(12, 5))
    assert action["payload"] == {
        "item_type": "todo",
        "title": "交报告",
        "status": "planned",
        "due_at": "2026-12-04T23:59:00+08:00",
    }
    assert action["preview_text"] == "新建待办：交报告（截止 12月4日 23:59）"


async def test_a_clock_deadline_is_the_due_time() -> None:
    action = await create("今晚十一点前得把报销单填了", at(12, 1, 23), at(12, 2, 0))
    assert action["payload"]["item_type"] == "todo"
    assert action["payload"]["title"] == "把报销单填了"
    assert action["payload"]["due_at"] == "2026-12-01T23:00:00+08:00"


async def test_the_word_todo_makes_a_todo_for_an_evening() -> None:
    action = await create("加个待办：今晚把周报改完", at(12, 1, 18), at(12, 2, 0))
    assert action["payload"]["item_type"] == "todo"
    assert action["payload"]["due_at"] == "2026-12-01T23:59:00+08:00"
    assert action["preview_text"] == "新建待办：把周报改完（截止 今天 23:59）"


async def test_parsed_title_and_item_type_win() -> None:
    action = await create(
        "明天上午九点那个电话，帮我记上", at(12, 2, 9), at(12, 2, 10), title="客户回访", item_type="todo"
    )
    assert action["payload"]["title"] == "客户回访"
    assert action["payload"]["due_at"] == "2026-12-02T09:00:00+08:00"


async def test_a_create_without_any_title_words_still_has_a_title() -> None:
    action = await create("明天下午四点提醒我", at(12, 2, 16), at(12, 2, 17))
    assert action["payload"]["title"] == "日程"


MEETING = item("开会", start=at(12, 2, 15), end=at(12, 2, 16), version=3)
READING = item("读书会", start=at(12, 3, 19), end=at(12, 3, 20, 30), version=2)
RENT = item("交房租", due=at(12, 10, 23, 59))


async def update(raw: str, candidate):
    envelope = await REGISTRY.dispatch(
        "schedule_todo_agent", "update", make_input(raw, at(12, 1), at(12, 8), items=[candidate])
    )
    return envelope


async def test_update_moves_the_item_keeping_its_duration() -> None:
    envelope = await update("把明天下午的会改到后天上午十点", MEETING)
    action = checked_action(envelope, None)
    assert action["target_id"] == str(MEETING.id) and action["base_version"] == 3
    assert action["payload"] == {"start_at": "2026-12-03T10:00:00+08:00", "end_at": "2026-12-03T11:00:00+08:00"}
    assert action["preview_text"] == "把「开会」从 12月2日 15:00 改到 12月3日 10:00"
    # an update's payload is the changed part of a TaskItemPayload
    TaskItemPayload.model_validate({**MEETING.model_dump(include={"item_type", "title"}), **action["payload"]})


async def test_update_with_only_a_clock_stays_on_the_items_day() -> None:
    action = checked_action(await update("周四的读书会挪到晚上八点吧", READING), None)
    assert action["payload"] == {"start_at": "2026-12-03T20:00:00+08:00", "end_at": "2026-12-03T21:30:00+08:00"}


async def test_update_brought_forward_to_a_clock_keeps_the_length() -> None:
    action = checked_action(await update("周四晚上读书会那个提早到六点半", READING), None)
    assert action["payload"] == {"start_at": "2026-12-03T18:30:00+08:00", "end_at": "2026-12-03T20:00:00+08:00"}


async def test_update_with_only_a_day_keeps_the_clock_time() -> None:
    action = checked_action(await update("开会改到下周五", MEETING), None)
    assert action["payload"] == {"start_at": "2026-12-11T15:00:00+08:00", "end_at": "2026-12-11T16:00:00+08:00"}


async def test_update_to_another_day_at_the_same_time_keeps_the_clock() -> None:
    action = checked_action(await update("明天的会改成后天同一时间", MEETING), None)
    assert action["payload"] == {"start_at": "2026-12-03T15:00:00+08:00", "end_at": "2026-12-03T16:00:00+08:00"}
    action = checked_action(await update("周四晚上的读书会推到周五晚上同一时间", READING), None)
    assert action["payload"] == {"start_at": "2026-12-04T19:00:00+08:00", "end_at": "2026-12-04T20:30:00+08:00"}


@pytest.mark.parametrize(
    ("raw", "start", "end"),
    [
        ("会往后推一个小时", "2026-12-02T16:00:00+08:00", "2026-12-02T17:00:00+08:00"),
        ("明天的会提前半个小时", "2026-12-02T14:30:00+08:00", "2026-12-02T15:30:00+08:00"),
        ("开会往后挪两天", "2026-12-04T15:00:00+08:00", "2026-12-04T16:00:00+08:00"),
        ("这个会推迟一周", "2026-12-09T15:00:00+08:00", "2026-12-09T16:00:00+08:00"),
        ("开会提早一个钟头", "2026-12-02T14:00:00+08:00", "2026-12-02T15:00:00+08:00"),
        ("会往后错半个钟头", "2026-12-02T15:30:00+08:00", "2026-12-02T16:30:00+08:00"),
        ("开会往前错一个小时", "2026-12-02T14:00:00+08:00", "2026-12-02T15:00:00+08:00"),
        ("开会晚半个小时吧", "2026-12-02T15:30:00+08:00", "2026-12-02T16:30:00+08:00"),
        ("会早一个钟头开", "2026-12-02T14:00:00+08:00", "2026-12-02T15:00:00+08:00"),
    ],
)
async def test_update_by_a_relative_shift(raw: str, start: str, end: str) -> None:
    action = checked_action(await update(raw, MEETING), None)
    assert action["payload"] == {"start_at": start, "end_at": end}


async def test_update_a_todos_deadline() -> None:
    action = checked_action(await update("交房租的截止时间改到15号", RENT), None)
    assert action["payload"] == {"due_at": "2026-12-15T23:59:00+08:00"}
    assert action["preview_text"] == "把「交房租」的截止时间从 12月10日 23:59 改到 12月15日 23:59"


async def test_update_the_title_only() -> None:
    action = checked_action(await update("把明天那个会的标题改成项目复盘会", MEETING), None)
    assert action["payload"] == {"title": "项目复盘会"}
    assert action["preview_text"] == "把「开会」改名为「项目复盘会」"


async def test_update_time_and_title_together() -> None:
    action = checked_action(await update("开会改到后天下午两点，改名为季度复盘", MEETING), None)
    assert action["payload"] == {
        "title": "季度复盘",
        "start_at": "2026-12-03T14:00:00+08:00",
        "end_at": "2026-12-03T15:00:00+08:00",
    }
    assert action["preview_text"] == "把「开会」从 12月2日 15:00 改到 12月3日 14:00，并改名为「季度复盘」"


async def test_update_without_anything_to_change_is_an_error() -> None:
    envelope = await update("明天那个会帮我改一下", MEETING)
    assert envelope.isError and envelope.db_action is None and not envelope.isNeedUser
    assert "开会" in envelope.error_message and "时间" in envelope.error_message


async def test_update_to_the_items_own_time_is_an_error() -> None:
    envelope = await update("开会改到明天下午三点", MEETING)
    assert envelope.isError and envelope.db_action is None


async def test_update_without_a_resolved_item_is_an_error() -> None:
    envelope = await REGISTRY.dispatch(
        "schedule_todo_agent", "update", make_input("把会改到周五", at(12, 1), at(12, 8), items=[MEETING, READING])
    )
    assert envelope.isError and envelope.db_action is None


async def test_delete_names_the_item_and_its_time() -> None:
    envelope = await REGISTRY.dispatch(
        "schedule_todo_agent", "delete", make_input("明天的会不开了，删掉吧", at(12, 2), at(12, 3), items=[MEETING])
    )
    action = checked_action(envelope, None)
    assert action == {
        "action": "delete",
        "target_type": "task_item",
        "target_id": str(MEETING.id),
        "base_version": 3,
        "payload": {},
        "preview_text": "删除「开会」（12月2日 15:00）",
    }


async def test_delete_a_todo_names_its_deadline() -> None:
    envelope = await REGISTRY.dispatch(
        "schedule_todo_agent", "delete", make_input("交房租那条删了", at(12, 1), at(12, 31), items=[RENT])
    )
    assert checked_action(envelope, None)["preview_text"] == "删除「交房租」（截止 12月10日 23:59）"


async def test_query_lists_a_day_in_time_order() -> None:
    gym = item("健身", start=at(12, 2, 18), end=at(12, 2, 19))
    report = item("交报告", due=at(12, 2, 23, 59))
    envelope = await REGISTRY.dispatch(
        "schedule_todo_agent", "query", make_input("明天我都有啥事", at(12, 2), at(12, 3), items=[gym, report, MEETING])
    )
    assert not envelope.isNeedUser and envelope.isDisplayResult and envelope.db_action is None
    assert envelope.result["reply"] == "明天有 3 项安排：15:00 开会；18:00 健身；交报告（截止 23:59）。"
    assert [i["title"] for i in envelope.result["items"]] == ["开会", "健身", "交报告"]
    assert envelope.result["items"][0]["start_at"] == "2026-12-02T15:00:00+08:00"


async def test_query_over_several_days_names_the_days() -> None:
    envelope = await REGISTRY.dispatch(
        "schedule_todo_agent", "query", make_input("这周还有什么安排", at(12, 1), at(12, 7), items=[READING, MEETING])
    )
    assert envelope.result["reply"] == "这段时间有 2 项安排：12月2日 15:00 开会；12月3日 19:00 读书会。"


async def test_query_of_an_empty_range() -> None:
    envelope = await REGISTRY.dispatch(
        "schedule_todo_agent", "query", make_input("周六下午我有空吗", at(12, 5, 13), at(12, 5, 18))
    )
    assert envelope.result == {"reply": "12月5日 13:00–18:00没有安排。", "items": []}
    envelope = await REGISTRY.dispatch(
        "schedule_todo_agent", "query", make_input("下周有安排吗", at(12, 7), at(12, 14))
    )
    assert envelope.result["reply"] == "这段时间没有安排。"
