"""The backend client against a real OpenAI-compatible server: vLLM's own OpenAI server (in the LLM venv, on the
packaged gemma-3-270m, a key required) started once on a free loopback port. Through the real wire: a JSON-schema
answer, a stream, a turn's deadline that closes the connection mid-answer (the server aborts the request), a wrong
key, a request the server refuses, and a social turn over it — each failure a named fallback, no key in any log.

The model is a small *base* model: what it writes is nonsense, so these tests check the wire and the format, never
the wording (tests/engine/test_cloud_layer.py scripts what a capable model would say)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import jsonschema
import pytest
from pydantic import SecretStr

from config.llm import LlmBackend
from engine.deadline import Deadline, StageTimeout
from engine.llm.lm import LmFailed, LmRequest, complete_within, new_request_id
from engine.llm.responder import ReplyBackend, SocialResponder
from protocol.http_chat import ChatRequest, TurnStatus
from serve_app.llm_backends.openai_lm import OpenAiLanguageModel
from tests.engine.test_cloud_layer import cloud_settings
from tests.support.fakes import FakeModelClient, Rig

pytestmark = pytest.mark.llm

ROOT = Path(__file__).resolve().parents[3]
KEY = "sk-local-vllm-5b7c1e9d"
MODEL = "gemma"
START_S = 300.0  # a cold start on a busy 2-core machine: imports, the weights, the KV cache
# the base model has no chat template: the same plain transcript the Planner deployment renders
TEMPLATE = (
    "{% for m in messages %}{{ {'system': 'System', 'user': 'User', 'assistant': 'Assistant'}[m['role']] }}: "
    "{{ m['content'] }}\n\n{% endfor %}Assistant:"
)
SCHEMA = {
    "type": "object",
    "properties": {"intent_id": {"type": "string", "enum": ["cabin_window_open", "cabin_music_pause"]}},
    "required": ["intent_id"],
    "additionalProperties": False,
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def vllm(tmp_path_factory):
    """vLLM's OpenAI server on 127.0.0.1 (its log in `log`), stopped (SIGTERM, then SIGKILL) after the module."""
    folder = tmp_path_factory.mktemp("vllm")
    model = Path(os.environ.get("BATON_STATE_DIR") or ROOT / "var") / "llm" / "gemma-3-270m"
    assert (model / "config.json").is_file(), f"{model} is missing: `make llm` converts the packaged model there"
    (folder / "template.jinja").write_text(TEMPLATE, encoding="utf-8")
    port, log = free_port(), folder / "server.log"
    env = {
        **os.environ,
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_CPU_OMP_THREADS_BIND": "nobind",
        "OMP_NUM_THREADS": "1",
        "HF_HUB_OFFLINE": "1",
        "VLLM_NO_USAGE_STATS": "1",
    }
    args = [
        str(ROOT / ".venv-llm" / "bin" / "python"),
        "-m",
        "vllm.entrypoints.openai.api_server",
        *("--model", str(model), "--served-model-name", MODEL, "--host", "127.0.0.1", "--port", str(port)),
        *("--api-key", KEY, "--chat-template", str(folder / "template.jinja"), "--max-model-len", "1024"),
        *("--dtype", "bfloat16", "--enforce-eager", "--uvicorn-log-level", "warning"),
        *("--structured-outputs-config", json.dumps({"backend": "xgrammar", "disable_any_whitespace": True})),
    ]
    with log.open("w") as out:
        server = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env, cwd=folder)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_S
        while True:
            assert server.poll() is None, f"vLLM exited {server.returncode}:\n{log.read_text()[-3000:]}"
            assert time.monotonic() < deadline, f"vLLM not up in {START_S:g} s:\n{log.read_text()[-3000:]}"
            try:
                with urllib.request.urlopen(f"{base}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                time.sleep(1.0)
        yield {"base_url": f"{base}/v1", "base": base, "log": log}
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(10)


def lm(vllm, *, key: str = KEY, **over) -> OpenAiLanguageModel:
    backend = LlmBackend(**{"base_url": vllm["base_url"], "model": MODEL, "timeout_s": 60.0, **over})
    return OpenAiLanguageModel("vllm", backend, SecretStr(key))


def request(text: str, *, schema=None, max_tokens: int = 24) -> LmRequest:
    return LmRequest(
        messages=[{"role": "user", "content": text}],
        json_schema=schema,
        max_tokens=max_tokens,
        temperature=0.0,
        request_id=new_request_id("t"),
    )


def running(vllm) -> float:
    with urllib.request.urlopen(f"{vllm['base']}/metrics", timeout=5) as answer:
        for line in answer.read().decode().splitlines():
            if line.startswith("vllm:num_requests_running"):
                return float(line.rsplit(" ", 1)[1])
    raise AssertionError("vLLM's /metrics has no vllm:num_requests_running")


async def test_a_json_schema_answer_comes_through_the_real_wire(vllm):
    reply = await lm(vllm, json_schema=True).complete(request("Open the window.", schema=SCHEMA))
    jsonschema.validate(json.loads(reply.text), SCHEMA)  # the server constrained the output to the schema we sent
    assert reply.prompt_tokens > 0 and reply.completion_tokens > 0


async def test_the_answer_streams_as_deltas(vllm):
    deltas = [d async for d in lm(vllm).stream(request("Count: 1, 2, 3,", max_tokens=12))]
    assert len(deltas) > 2 and deltas[-1]["finish_reason"] in ("stop", "length")
    # a base model's words may be blank lines: what is checked is that text came as it was decoded, and the count
    assert "".join(d["text"] for d in deltas) and deltas[-1]["completion_tokens"] > 0


async def test_the_deadline_closes_the_connection_and_the_server_aborts_the_request(vllm, caplog):
    caplog.set_level(logging.DEBUG)
    model = lm(vllm)
    deadline = Deadline(2000.0)
    long = request("Count from 1 to 500: 1, 2, 3, 4, 5,", max_tokens=800)
    task = asyncio.ensure_future(complete_within(model, long, deadline=deadline, stage="planner_llm", budget_s=1.0))
    await asyncio.sleep(0.7)
    assert await asyncio.to_thread(running, vllm) == 1.0, "the request is decoding when the deadline comes"
    t0 = time.perf_counter()
    with pytest.raises(StageTimeout):
        await task
    assert time.perf_counter() - t0 < 0.6
    # the server saw the client go and stopped decoding: nothing left running well before 800 tokens (~20 s)
    for _ in range(40):
        if await asyncio.to_thread(running, vllm) == 0.0:
            break
        await asyncio.sleep(0.1)
    assert await asyncio.to_thread(running, vllm) == 0.0
    assert KEY not in caplog.text


async def test_a_wrong_key_and_a_refused_request_are_named_fallbacks(vllm, caplog):
    caplog.set_level(logging.DEBUG)
    with pytest.raises(LmFailed, match=r"^vllm: HTTP 401$"):
        await lm(vllm, key="sk-wrong").complete(request("hi"))
    with pytest.raises(LmFailed, match=r"^vllm: HTTP 400$"):  # more tokens than the model's context
        await lm(vllm).complete(request("hi", max_tokens=5000))
    assert KEY not in caplog.text and "sk-wrong" not in caplog.text
    assert KEY not in vllm["log"].read_text(), "not even the server logs the key it was started with"


async def test_a_social_turn_over_the_real_server_answers_inside_its_budget_and_says_which_backend(vllm):
    responder = SocialResponder([ReplyBackend("vllm", lm(vllm), 0.6, timeout_s=3.0)], budget_s=0.3, extra_ms=2400.0)
    r = Rig(models=FakeModelClient(), settings=cloud_settings(planner=[], social=["qwen"]), replies=responder)
    t0 = time.perf_counter()
    resp = await r.engine.chat(ChatRequest(user_id="u1", session_id="s1", text="我好焦虑"))
    assert time.perf_counter() - t0 < resp.timings.budget_ms / 1000 + 0.2
    notes = resp.routing_debug.replies
    assert [n.backend for n in notes] == ["vllm"] and notes[0].outcome in ("generated", "refused", "timed_out")
    assert resp.status == (TurnStatus.social if notes[0].outcome == "generated" else TurnStatus.rejected)
