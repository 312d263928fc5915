"""Semantic memory in PostgreSQL (message_vectors, migration 0006): a logged user message's vector, and recall of the
user's earlier messages nearest a turn's vector (cosine, over the most recent ones)."""

from __future__ import annotations

from collections.abc import Sequence
from uuid import UUID

import asyncpg
import numpy as np

RECALL_WINDOW = 500  # the most recent messages with vectors a recall compares against


async def remember(conn: asyncpg.Connection, *, user_id: UUID, message_id: UUID, vector: Sequence[float]) -> None:
    """Keep `message_id`'s vector (a repeat is a no-op)."""
    await conn.execute(
        "INSERT INTO message_vectors (message_id, user_id, vector) VALUES ($1, $2, $3) "
        "ON CONFLICT (message_id) DO NOTHING",
        message_id,
        user_id,
        list(vector),
    )


async def recall(
    conn: asyncpg.Connection,
    *,
    user_id: UUID,
    vector: Sequence[float],
    k: int,
    min_score: float,
    exclude: Sequence[str] = (),
) -> list[tuple[str, float]]:
    """The user's `k` earlier messages nearest `vector` (cosine >= min_score), best first: (text, score)."""
    rows = await conn.fetch(
        "SELECT m.raw_content, v.vector FROM message_vectors v JOIN conversation_messages m "
        "ON m.user_id = v.user_id AND m.id = v.message_id WHERE v.user_id = $1 ORDER BY v.created_at DESC LIMIT $2",
        user_id,
        RECALL_WINDOW,
    )
    if not rows:
        return []
    texts = [r["raw_content"] for r in rows]
    matrix = np.asarray([r["vector"] for r in rows], dtype=np.float32)
    query = np.asarray(vector, dtype=np.float32)
    scores = matrix @ query / (np.linalg.norm(matrix, axis=1) * (np.linalg.norm(query) or 1.0) + 1e-9)
    found: list[tuple[str, float]] = []
    for i in np.argsort(-scores):
        if scores[i] < min_score or len(found) == k:
            break
        if texts[i] not in exclude and texts[i] not in (t for t, _ in found):
            found.append((texts[i], round(float(scores[i]), 4)))
    return found
