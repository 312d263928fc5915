"""Draws the same sequence of conversations for every system: a seeded weighted pick of kind, then conversation."""

from __future__ import annotations

import random
from dataclasses import dataclass

from benchmarks.scenario import Mix, Turn


@dataclass(frozen=True)
class Conversation:
    kind: str
    turns: tuple[Turn, ...]


class ConversationSource:
    def __init__(self, mix: Mix, seed: int) -> None:
        self._rng = random.Random(seed)
        self._kinds = list(mix.kinds)
        self._weights = [mix.kinds[k].weight for k in self._kinds]
        self._mix = mix

    def next(self) -> Conversation:
        kind = self._rng.choices(self._kinds, weights=self._weights)[0]
        turns = self._rng.choice(self._mix.kinds[kind].conversations)
        return Conversation(kind, tuple(turns))


def mean_turns(mix: Mix) -> float:
    """Expected turns per conversation, used to turn an offered turn rate into a conversation rate."""
    total = sum(k.weight for k in mix.kinds.values())
    return sum(
        k.weight / total * sum(len(c) for c in k.conversations) / len(k.conversations) for k in mix.kinds.values()
    )
