"""Semantic memory against a real PostgreSQL: a message's vector kept once, recall by cosine over the user's own
messages only, best first, above the threshold, the turn's own text left out."""

from __future__ import annotations

import math
import uuid

from store import memory, users
from tests.store.test_conversation import _append, _input


def unit(*xs: float) -> list[float]:
    norm = math.sqrt(sum(x * x for x in xs))
    return [x / norm for x in xs]


async def test_recall_returns_the_users_nearest_messages_best_first(db):
    async with db.connection() as conn:
        me, other = (await users.shadow(conn, uuid.uuid4().hex)).id, (await users.shadow(conn, uuid.uuid4().hex)).id
    mine = await _append(db, me, [_input("打开车窗"), _input("车窗开一点"), _input("放首歌"), _input("今天好热")])
    theirs = await _append(db, other, [_input("别人的车窗")])
    vectors = [unit(1, 0, 0), unit(0.9, 0.1, 0), unit(0, 1, 0), unit(0.5, 0, 0.5)]
    async with db.connection() as conn:
        for message, vector in zip(mine, vectors, strict=True):
            await memory.remember(conn, user_id=me, message_id=message.id, vector=vector)
        await memory.remember(conn, user_id=me, message_id=mine[0].id, vector=unit(0, 0, 1))  # a repeat changes nothing
        await memory.remember(conn, user_id=other, message_id=theirs[0].id, vector=unit(1, 0, 0))
        found = await memory.recall(conn, user_id=me, vector=unit(1, 0.05, 0), k=3, min_score=0.6)
        assert [t for t, _ in found] == ["打开车窗", "车窗开一点", "今天好热"]
        assert found[0][1] > found[1][1] > found[2][1] >= 0.6
        assert [t for t, _ in await memory.recall(conn, user_id=me, vector=unit(1, 0.05, 0), k=3, min_score=0.9)] == [
            "打开车窗",
            "车窗开一点",
        ]
        # the turn's own text is not recalled to itself; nothing of another user ever is
        assert [
            t
            for t, _ in await memory.recall(
                conn, user_id=me, vector=unit(1, 0, 0), k=1, min_score=0.5, exclude=("打开车窗",)
            )
        ] == ["车窗开一点"]
        assert (
            await memory.recall(
                conn, user_id=(await users.shadow(conn, uuid.uuid4().hex)).id, vector=unit(1, 0, 0), k=3, min_score=0.0
            )
            == []
        )
