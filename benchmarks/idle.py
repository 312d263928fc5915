"""The idle phase: sequential single turns, one at a time with a short pause, each from a fresh user (a new
session), systems interleaved in blocks (A B C D, then D C B A, …) on the same utterances per block."""

from __future__ import annotations

import asyncio
import random
import time
import uuid
from collections.abc import Callable

import aiohttp

from benchmarks.driver import Sample, send_turn
from benchmarks.scenario import Idle, Turn
from benchmarks.stats import distribution, percentile


def block_order(names: list[str], rounds: int) -> list[list[str]]:
    """The systems' order in each round: as given in even rounds, reversed in odd ones."""
    return [list(names) if r % 2 == 0 else list(reversed(names)) for r in range(rounds)]


def block_texts(texts: list[str], spec: Idle, seed: int) -> list[list[str]]:
    """The utterances of each round's block (every system gets the same ones): a seeded shuffle, cycled."""
    if not texts:
        raise ValueError("the idle phase has no utterances")
    order = list(texts)
    random.Random(seed).shuffle(order)
    n = spec.turns_per_block
    return [[order[(r * n + i) % len(order)] for i in range(n)] for r in range(spec.rounds)]


async def _turns(
    url: str,
    name: str,
    texts: list[str],
    *,
    warmup: bool,
    tag: str,
    block: int,
    pause_s: float,
    timeout_s: float,
    t0: float,
    kind: str,
) -> list[Sample]:
    samples = []
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    async with aiohttp.ClientSession(base_url=url, timeout=timeout) as session:
        for i, text in enumerate(texts):
            user_id = f"idle-{tag}-{name}-{block}-{'w' if warmup else ''}{i}"  # a block's warm-up users are its own
            sample, _ = await send_turn(
                session,
                kind=kind,
                index=0,
                turn=Turn(text=text),
                user_id=user_id,
                session_id=None,
                t_send=time.perf_counter() - t0,
                warmup=warmup,
            )
            samples.append(sample)
            await asyncio.sleep(pause_s)
    return samples


async def run_idle(
    urls: dict[str, str],
    texts: list[str],
    spec: Idle,
    *,
    seed: int,
    timeout_s: float,
    log=print,
    focus: Callable[..., object] = lambda name, freeze=False: None,
) -> tuple[dict, dict[str, list[Sample]]]:
    """Warm every system with `spec.warmup_turns` turns (kept, marked warm-up), then the interleaved blocks, each
    after `spec.block_warmup_turns` more warm-up turns.

    Returns (the idle section of results.json, every system's samples); `urls` maps system name → base URL.
    `focus(name, freeze=spec.freeze_others)` runs before each system's warm-up and blocks (benchmarks.foreground);
    when it returns true (the others are stopped) the block waits `spec.thaw_s` first.
    """
    names, tag, t0 = list(urls), uuid.uuid4().hex[:8], time.perf_counter()
    blocks, pause_s = block_texts(texts, spec, seed), spec.pause_ms / 1000.0
    samples: dict[str, list[Sample]] = {name: [] for name in names}
    common = dict(tag=tag, pause_s=pause_s, timeout_s=timeout_s, t0=t0, kind=spec.kind)
    await asyncio.sleep(spec.settle_s)

    async def measure(name: str) -> None:
        if focus(name, freeze=spec.freeze_others):  # others stopped: let this one's overdue timers fire first
            await asyncio.sleep(spec.thaw_s)

    for name in names:
        await measure(name)
        warm = [blocks[0][i % len(blocks[0])] for i in range(spec.warmup_turns)]
        samples[name] += await _turns(urls[name], name, warm, warmup=True, block=-1, **common)
    order = block_order(names, spec.rounds)
    by_block: dict[str, list[list[Sample]]] = {name: [] for name in names}
    for rnd, systems in enumerate(order):
        for name in systems:
            await measure(name)
            warm = [blocks[rnd][i % len(blocks[rnd])] for i in range(spec.block_warmup_turns)]
            samples[name] += await _turns(urls[name], name, warm, warmup=True, block=rnd, **common)
            block = await _turns(urls[name], name, blocks[rnd], warmup=False, block=rnd, **common)
            samples[name] += block
            by_block[name].append(block)
            wall = distribution([s.wall_ms for s in block if s.status == 200]) or {}
            log(
                f"idle {name} round {rnd}: p50 {wall.get('p50')} ms p90 {wall.get('p90')} ms "
                f"codes {sorted({s.status for s in block})}"
            )
    section = {
        "spec": spec.model_dump(mode="json"),
        "order": order,
        "systems": {name: idle_summary(samples[name], by_block[name]) for name in names},
    }
    return section, samples


def idle_summary(samples: list[Sample], blocks: list[list[Sample]]) -> dict:
    """Client wall and server total distributions, per-stage p50 and each block's client p50, over measured 200s."""
    measured = [s for s in samples if not s.warmup]
    ok = [s for s in measured if s.status == 200]
    stages = sorted({stage for s in ok for stage in s.stages})
    codes: dict[str, int] = {}
    for s in measured:
        codes[str(s.status)] = codes.get(str(s.status), 0) + 1
    block_p50 = [
        percentile([s.wall_ms for s in b if s.status == 200], 50) for b in blocks if any(s.status == 200 for s in b)
    ]
    return {
        "turns": len(measured),
        "ok": len(ok),
        "status_counts": dict(sorted(codes.items())),
        "degraded_turns": sum(1 for s in ok if s.degraded),
        "client_wall_ms": distribution([s.wall_ms for s in ok]),
        "server_total_ms": distribution([s.server_total_ms for s in ok if s.server_total_ms is not None]),
        "stages_p50_ms": {
            stage: round(percentile([s.stages[stage] for s in ok if stage in s.stages], 50), 3) for stage in stages
        },
        "block_client_p50_ms": [round(x, 3) for x in block_p50],
    }
