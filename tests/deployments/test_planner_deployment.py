"""The Planner deployment's body around a fake engine: warm-up, streaming, the counts of aborts (a cancelled call, an
abort by id, a caller that stops reading), and fault injection. The real engine is tests/llm's (make test-llm)
and the served app's."""

from __future__ import annotations

import asyncio

import pytest

from deployments.faults import InjectedFault
from serve_app.replicas.planner import STAGE, Planner


class FakeEngine:
    """Yields one delta per word of `text`, `pause` seconds apart; records what it was asked."""

    def __init__(self, text: str = "one two three", *, pause: float = 0.0) -> None:
        self.words, self.pause = text.split(), pause
        self.requests: list[dict] = []
        self.aborted: list[str] = []
        self.load_s = 1.5

    async def stream(self, request):
        self.requests.append(request)
        n = 0
        for n, word in enumerate(self.words, 1):
            await asyncio.sleep(self.pause)
            if request["request_id"] in self.aborted:
                yield {
                    "text": "",
                    "finish_reason": "abort",
                    "prompt_tokens": 3,
                    "completion_tokens": n - 1,
                    "ttft_ms": 1.0,
                    "e2e_ms": 2.0,
                }
                return
            last = n == len(self.words)
            yield {
                "text": word + ("" if last else " "),
                "finish_reason": "stop" if last else None,
                "prompt_tokens": 3,
                "completion_tokens": n,
                "ttft_ms": 1.0,
                "e2e_ms": 2.0,
            }

    async def complete(self, request):
        return {"text": "".join([d["text"] async for d in self.stream(request)])}

    async def abort(self, request_id):
        self.aborted.append(request_id)
        return True


def request(request_id="r1", **extra):
    return {
        "messages": [{"role": "user", "content": "hi"}],
        "json_schema": {"type": "object"},
        "max_tokens": 16,
        "temperature": 0.0,
        "request_id": request_id,
        **extra,
    }


async def planner(engine=None) -> Planner:
    """As Serve builds a deployment with an async constructor: the object, then its __init__ awaited."""
    p = Planner.__new__(Planner)
    await p.__init__({}, engine=engine or FakeEngine())
    return p


async def test_the_constructor_warms_the_engine_up_with_free_text_and_a_schema():
    engine = FakeEngine()
    p = await planner(engine)
    assert p.ready
    assert [r["json_schema"] is not None for r in engine.requests] == [False, True]
    p.check_health()


async def test_a_completion_joins_the_deltas_and_counts_the_tokens():
    p = await planner()
    reply = await p.complete(request())
    assert reply["text"] == "one two three" and reply["finish_reason"] == "stop" and reply["completion_tokens"] == 3
    stats = p.stats()
    assert stats["requests"] == 1 and stats["finished"] == 1 and stats["aborted"] == 0
    assert stats["completion_tokens"] == 3 and stats["in_flight"] == 0


async def test_a_cancelled_call_is_counted_as_aborted_with_what_it_had_decoded():
    p = await planner(FakeEngine("a b c d e f g h", pause=0.02))
    task = asyncio.ensure_future(p.complete(request("slow")))
    await asyncio.sleep(0.07)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    stats = p.stats()
    assert stats["aborted"] == 1 and stats["aborted_decoding"] == 1 and stats["finished"] == 0
    assert stats["recent_aborts"][0]["request_id"] == "slow" and stats["recent_aborts"][0]["how"] == "cancelled"
    assert 1 <= stats["recent_aborts"][0]["completion_tokens"] < 8


async def test_an_abort_by_id_ends_the_pending_call_with_finish_reason_abort():
    engine = FakeEngine("a b c d e f g h", pause=0.02)
    p = await planner(engine)
    task = asyncio.ensure_future(p.complete(request("byid")))
    await asyncio.sleep(0.05)
    assert await p.abort("byid")
    reply = await task
    assert reply["finish_reason"] == "abort"
    assert p.stats()["aborted"] == 1 and p.stats()["recent_aborts"][0]["how"] == "abort"


async def test_a_caller_that_stops_reading_the_stream_aborts_it():
    p = await planner(FakeEngine("a b c d e f", pause=0.01))
    stream = p.stream(request("left"))
    assert (await stream.__anext__())["text"] == "a "
    await stream.aclose()
    assert p.stats()["aborted"] == 1 and p.stats()["recent_aborts"][0]["how"] == "closed"


async def test_faults_fail_delay_or_force_a_long_generation():
    engine = FakeEngine()
    p = await planner(engine)
    p.reconfigure({"faults": "error=1"})
    with pytest.raises(InjectedFault, match=STAGE):
        await p.complete(request("e"))
    p.reconfigure({"faults": "tokens=400"})
    await p.complete(request("t"))
    forced = engine.requests[-1]
    assert (
        forced["min_tokens"] == forced["max_tokens"] == 400 and forced["ignore_eos"] and forced["json_schema"] is None
    )
    p.reconfigure({"faults": ""})
    await p.complete(request("plain"))
    assert "min_tokens" not in engine.requests[-1] and engine.requests[-1]["json_schema"] == {"type": "object"}


def test_a_bad_token_count_in_a_fault_spec_is_refused():
    from deployments.faults import FaultSet

    assert FaultSet.parse("planner_llm:tokens=300").faults["planner_llm"].tokens == 300
    with pytest.raises(ValueError, match="whole number"):
        FaultSet.parse("planner_llm:tokens=lots")
