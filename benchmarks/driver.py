"""Drives one load window against a URL: open loop (arrivals at a rate) or closed loop (N sessions), over HTTP."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import time
from dataclasses import asdict, dataclass, field

import aiohttp

from benchmarks.arrivals import arrival_times
from benchmarks.conversations import Conversation, ConversationSource, mean_turns
from benchmarks.scenario import Arrival, Load, Mix, Process, Turn

PATHS = {"chat": "/api/v1/agent/chat", "fill_slots": "/api/v1/agent/fill-slots"}
LOST = 0  # status recorded for a request that got no HTTP answer (timeout, reset)
MAX_BACKOFF_S = 5.0


@dataclass
class Sample:
    kind: str
    turn: int
    endpoint: str
    t_send: float
    wall_ms: float
    status: int
    warmup: bool
    error_code: str | None = None
    retry_after: str | None = None
    server_total_ms: float | None = None
    stages: dict[str, float] = field(default_factory=dict)
    degraded: list[str] = field(default_factory=list)


@dataclass
class Window:
    """What one run at one load level produced, with the client's own CPU use over it."""

    level: float
    process: str
    samples: list[Sample]
    wall_s: float
    cpu_s: float
    loadavg_1m: float
    abandoned_turns: int
    sent_conversations: int

    def as_dict(self) -> dict:
        return {**{k: v for k, v in asdict(self).items() if k != "samples"}, "client_cpu_share": self.client_cpu_share}

    @property
    def client_cpu_share(self) -> float:
        return round(self.cpu_s / self.wall_s, 3) if self.wall_s else 0.0


class _Run:
    def __init__(self, session: aiohttp.ClientSession, load: Load, arrival: Arrival, t0: float) -> None:
        self.session, self.load, self.arrival, self.t0 = session, load, arrival, t0
        self.samples: list[Sample] = []
        self.abandoned = 0
        self._ids = itertools.count()

    async def conversation(self, conv: Conversation) -> Sample | None:
        """Send the conversation's turns in order; returns the last sample (a shed or failed turn ends it)."""
        session_id, user_id = None, f"bench-{next(self._ids)}"
        sample = None
        for i, turn in enumerate(conv.turns):
            if i and self.arrival.think_time_ms:
                await asyncio.sleep(self.arrival.think_time_ms / 1000.0)
            t_send = time.perf_counter() - self.t0
            sample, body = await send_turn(
                self.session,
                kind=conv.kind,
                index=i,
                turn=turn,
                user_id=user_id,
                session_id=session_id,
                t_send=t_send,
                warmup=t_send < self.load.warmup_s,
            )
            self.samples.append(sample)
            if sample.status != 200:  # a shed or failed turn ends the conversation, as a user would retry later
                self.abandoned += len(conv.turns) - i - 1
                return sample
            session_id = body.get("session_id", session_id)
        return sample


def shed_backoff_s(sample: Sample | None) -> float:
    """How long a closed-loop session waits after a shed turn: its Retry-After (1 s when absent), at most 5 s;
    else 0."""
    if sample is None or sample.status not in (429, 503):
        return 0.0
    try:
        return min(max(float(sample.retry_after), 0.0), MAX_BACKOFF_S) if sample.retry_after else 1.0
    except ValueError:
        return 1.0


async def send_turn(
    session: aiohttp.ClientSession,
    *,
    kind: str,
    index: int,
    turn: Turn,
    user_id: str,
    session_id: str | None,
    t_send: float,
    warmup: bool,
) -> tuple[Sample, dict]:
    """POST one turn and time it; an unanswered request is a LOST sample, never an exception."""
    payload = {"user_id": user_id, **({"session_id": session_id} if session_id else {})}
    if turn.endpoint == "fill_slots":
        payload.update({k: v for k, v in (("text", turn.text), ("slots", turn.slots)) if v is not None})
    else:
        payload["text"] = turn.text
    start = time.perf_counter()
    sample = Sample(
        kind=kind, turn=index, endpoint=turn.endpoint, t_send=round(t_send, 4), wall_ms=0.0, status=LOST, warmup=warmup
    )
    body: dict = {}
    try:
        async with session.post(PATHS[turn.endpoint], json=payload) as resp:
            raw = await resp.read()
            sample.status = resp.status
            sample.retry_after = resp.headers.get("Retry-After")
    except (TimeoutError, aiohttp.ClientError) as exc:
        sample.error_code = type(exc).__name__
    else:
        try:
            body = json.loads(raw)
        except ValueError:  # e.g. a bare 503 from Ray's proxy: answered, but not by Baton
            sample.error_code = "not_json"
    sample.wall_ms = round((time.perf_counter() - start) * 1000.0, 3)
    if not isinstance(body, dict):
        body = {}
    if sample.status == 200:
        timings = body.get("timings", {})
        sample.server_total_ms = timings.get("total_ms")
        sample.stages = timings.get("stages", {})
        sample.degraded = timings.get("degraded", [])
    elif isinstance(body.get("error"), dict):
        sample.error_code = body["error"].get("code")
    return sample, body


async def run_window(
    url: str,
    *,
    mix: Mix,
    load: Load,
    arrival: Arrival,
    level: float,
    seed: int,
    timeout_s: float,
    duration_s: float | None = None,
) -> Window:
    """Run one load level: the warm-up (discarded later) then `duration_s` measured; waits for every answer."""
    total_s = load.warmup_s + (duration_s if duration_s is not None else load.duration_s)
    source = ConversationSource(mix, seed)
    connector = aiohttp.TCPConnector(limit=0)
    timeout = aiohttp.ClientTimeout(total=timeout_s)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    async with aiohttp.ClientSession(base_url=url, connector=connector, timeout=timeout) as session:
        run = _Run(session, load, arrival, wall0)
        if arrival.process == Process.closed:
            sent = await _closed(run, source, int(level), total_s)
        else:
            sent = await _open(run, source, mix, level, total_s, seed)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    run.samples.sort(key=lambda s: s.t_send)
    return Window(
        level=level,
        process=arrival.process.value,
        samples=run.samples,
        wall_s=round(wall, 3),
        cpu_s=round(cpu, 3),
        loadavg_1m=round(os.getloadavg()[0], 2),
        abandoned_turns=run.abandoned,
        sent_conversations=sent,
    )


async def _open(run: _Run, source: ConversationSource, mix: Mix, rate: float, total_s: float, seed: int) -> int:
    # the level is a turn rate; conversations arrive at rate / (turns per conversation)
    times = arrival_times(
        rate=rate / mean_turns(mix),
        duration_s=total_s,
        ramp_up_s=run.load.ramp_up_s,
        process=run.arrival.process.value,
        cv=run.arrival.gamma_cv,
        seed=seed,
    )
    tasks = []
    for t in times:
        delay = run.t0 + t - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(run.conversation(source.next())))
    await asyncio.gather(*tasks)
    return len(times)


async def _closed(run: _Run, source: ConversationSource, sessions: int, total_s: float) -> int:
    count = itertools.count()

    async def worker(i: int) -> None:
        # workers start spread over the ramp-up so the first second is not one synchronised wave
        await asyncio.sleep(run.load.ramp_up_s * i / max(1, sessions))
        while time.perf_counter() - run.t0 < total_s:
            next(count)
            last = await run.conversation(source.next())
            # a shed session honours Retry-After instead of hammering the server with instant 503s
            await asyncio.sleep(min(shed_backoff_s(last), max(0.0, total_s - (time.perf_counter() - run.t0))))

    await asyncio.gather(*(worker(i) for i in range(sessions)))
    return next(count)
