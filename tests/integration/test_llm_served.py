"""The LLM planner on the real app: the Planner deployment (vLLM on the CPU in its own venv, the packaged
gemma-3-270m), reached by the `openai` SDK through the ingress and by turns the local planners could not plan.

gemma-3-270m is a base model: these tests hold the serving path to its promises (schema-valid output, the budget,
the abort, validation before anything runs), not the model to good plans."""

from __future__ import annotations

import json
import time
from pathlib import Path

import jsonschema
import openai
import pytest
from ray import serve

from serve_app.args import PLANNER
from serve_app.ops import launcher
from tests.support.http_client import served_client
from tests.support.serving import until_fault_shows
from tests.support.ws_client import Conversation

CHAT, STREAM = "/api/v1/agent/chat", "/api/v1/agent/chat-stream"
MODEL = "baton-planner"
# two requests joined by a connective, neither said clearly enough for the local planners: the LLM is asked
VAGUE = "帮我把那个弄一下然后再看看"
SCHEMA = {
    "type": "object",
    "properties": {"room": {"type": "string", "enum": ["kitchen", "bedroom"]}, "on": {"type": "boolean"}},
    "required": ["room", "on"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def client(serve_app):
    with served_client(serve_app["url"], 30.0) as c:
        yield c


@pytest.fixture(scope="module")
def sdk(serve_app):
    return openai.OpenAI(base_url=f"{serve_app['url']}/v1", api_key="local", timeout=60.0, max_retries=0)


def planner_stats() -> dict:
    return serve.get_deployment_handle(PLANNER, app_name=launcher.APP_NAME).stats.remote().result(timeout_s=10)


def test_health_was_green_only_with_the_planner_running_and_warm(serve_app):
    app = serve.status().applications[launcher.APP_NAME]
    assert app.deployments[PLANNER].status == "HEALTHY"
    stats = planner_stats()
    assert stats["warmup_s"] > 0, "the engine answered its warm-up before the replica started"


def test_the_first_escalation_after_health_is_green_reads_the_prompt_from_the_engines_cache(serve_app, client):
    """The warm-up planned through the planner's own prompt: the first turn that escalates prefills its own tail
    only (a prefill from scratch takes ~30 s on this CPU, far past the budget), so the engine is decoding the plan
    well inside the budget, whether or not the whole plan fits in it."""
    before = planner_stats()
    body = client.post(CHAT, json={"user_id": "llm-first", "text": VAGUE}).json()
    llm = body["routing_debug"]["planner"]["llm"]
    assert body["timings"]["escalated"] and llm["request_id"], body["routing_debug"]["planner"]
    if llm["outcome"] == "timed_out":  # the base model writes prose plans: ~35 tokens at ~0.1 s each here
        deadline = time.time() + 10
        while (after := planner_stats())["aborted"] == before["aborted"] and time.time() < deadline:
            time.sleep(0.2)
        [abort] = [a for a in after["recent_aborts"] if a["request_id"] == llm["request_id"]]
        assert abort["completion_tokens"] > 0, f"still prefilling at the deadline: {abort}"
    else:
        assert llm["cached_tokens"] >= 0.8 * llm["prompt_tokens"] > 0, llm


def _processes() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every process."""
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                found[int(entry.name)] = (
                    ppid,
                    (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"),
                )
            except (OSError, IndexError, ValueError):
                pass
    return found


def test_the_engine_processes_are_the_planner_replicas_own_children():
    """vLLM's engine core runs in a child process of the Planner replica (its workers in grandchildren): they go
    when the replica goes, so stopping Ray leaves no engine behind."""
    procs = _processes()
    replicas = {pid for pid, (_, cmd) in procs.items() if "ServeReplica:baton:Planner" in cmd}
    engines = [pid for pid, (_, cmd) in procs.items() if cmd.startswith("VLLM::EngineCore")]
    mine = [pid for pid in engines if procs[pid][0] in replicas]
    assert replicas and mine, (replicas, engines)


def test_the_openai_sdk_lists_the_model_and_gets_a_completion(sdk):
    assert [m.id for m in sdk.models.list().data] == [MODEL]
    answer = sdk.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Say hello."}], max_tokens=8
    )
    assert answer.choices[0].finish_reason in ("stop", "length") and answer.choices[0].message.content
    assert answer.usage.completion_tokens >= 1 and answer.usage.prompt_tokens > 0


def test_the_openai_sdk_gets_a_schema_constrained_json_answer(sdk):
    answer = sdk.chat.completions.create(
        model=MODEL,
        max_tokens=32,
        messages=[{"role": "user", "content": "Turn on the kitchen light. Answer in JSON."}],
        response_format={"type": "json_schema", "json_schema": {"name": "light", "schema": SCHEMA}},
    )
    assert answer.choices[0].finish_reason == "stop"
    jsonschema.validate(json.loads(answer.choices[0].message.content), SCHEMA)


def test_the_openai_sdk_streams(sdk):
    chunks = list(
        sdk.chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Count to three."}], max_tokens=12, stream=True
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert chunks[-1].choices[0].finish_reason in ("stop", "length")


def test_a_turn_the_local_planners_reject_escalates_to_the_llm_inside_its_budget(client):
    body = client.post(CHAT, json={"user_id": "llm-1", "text": VAGUE}).json()
    timings, planner = body["timings"], body["routing_debug"]["planner"]
    assert timings["escalated"] and timings["budget_ms"] == 3000
    assert timings["total_ms"] <= timings["budget_ms"] + 50
    llm = planner["llm"]
    assert llm is not None and llm["outcome"] in ("accepted", "rejected", "timed_out")
    if llm["outcome"] == "accepted":  # a validated, grounded plan ran
        assert planner["accepted_by"] == "llm" and body["workflow"]["planner"] == "llm"
    else:  # nothing the model said ran
        assert body["workflow"] is None and planner["accepted_by"] is None
    if llm["outcome"] == "timed_out":
        assert timings["degraded"] == ["planner"]


def test_chat_stream_says_it_escalated_before_waiting_on_the_llm(serve_app):
    with (
        served_client(serve_app["url"], 30.0) as c,
        c.stream("POST", STREAM, json={"user_id": "llm-stream", "text": VAGUE}) as resp,
    ):
        events = [json.loads(line) for line in resp.iter_lines() if line]
    assert events[0]["event"] == "ack" and events[0]["escalated"] and events[0]["budget_ms"] == 3000
    assert events[-1]["event"] == "final" and events[-1]["response"]["timings"]["escalated"]


def test_the_websocket_says_it_is_planning_first(serve_app):
    conversation = Conversation(serve_app["url"], query="?user_id=llm-ws", headers={})
    try:
        events = conversation.turn(
            "dialogue.input", {"raw_content": VAGUE, "client_message_id": "llm-ws-1"}, timeout=30
        )
    finally:
        conversation.close()
    first = events[0]
    assert first["type"] == "execution.processing" and first["payload"]["stage"] == "planning"
    assert first["payload"]["budget_ms"] == 3000 and first["payload"]["target_agent_name"] is None


def test_a_slow_planner_is_aborted_mid_decode_and_the_turn_answers_inside_its_budget(serve_app, client):
    """A turn whose local stages ran long on a loaded machine can reach the engine with too little time left to
    decode a single token (aborted during its prefill): such a turn is sent again, at most three turns in all."""
    launcher.set_faults(serve_app["config"], "planner_llm:tokens=2000")  # 2000 tokens: a minute of decoding here
    try:
        for _ in range(3):
            before = planner_stats()
            t0 = time.perf_counter()
            body, _ = until_fault_shows(
                lambda: client.post(CHAT, json={"user_id": "llm-slow", "text": VAGUE}).json(),
                lambda b: b["timings"]["degraded"] == ["planner"],
            )
            wall_ms = (time.perf_counter() - t0) * 1000
            timings = body["timings"]
            assert (
                timings["degraded"] == ["planner"] and body["routing_debug"]["planner"]["llm"]["outcome"] == "timed_out"
            )
            assert timings["total_ms"] <= timings["budget_ms"] + 50 and wall_ms < 2 * (timings["budget_ms"] + 1000)
            assert body["workflow"] is None, "the turn keeps the local decision"
            deadline = time.time() + 10
            while (after := planner_stats())["aborted"] == before["aborted"] and time.time() < deadline:
                time.sleep(0.2)
            aborted = [a for a in after["recent_aborts"] if a not in before["recent_aborts"]]
            assert aborted, "the deadline aborted the request inside the engine"
            if aborted[-1]["completion_tokens"] > 0:
                break
    finally:
        launcher.set_faults(serve_app["config"], "")
    assert aborted[-1]["completion_tokens"] > 0, f"the engine was decoding when the deadline aborted it: {aborted}"
    assert after["in_flight"] == 0


def test_a_dspy_program_reaches_the_planner_through_its_handle_under_its_schema():
    """Seed 000's Router as a DSPy program over the Planner's Serve handle: the engine answers under the program's
    output schema (modules as an enum), inside the deadline given."""
    import asyncio

    from engine.deadline import Deadline
    from engine.llm.dspy_engine import dspy_lm
    from engine.llm.programs import router
    from serve_app.replicas.llm_client import HandleLanguageModel

    class Recorded(HandleLanguageModel):
        replies: list = []

        async def complete(self, request):
            reply = await super().complete(request)
            self.replies.append(reply)
            return reply

    program = router(["EmotionSupport", "Scheduling", "Summary"])
    lm = Recorded(serve.get_deployment_handle(PLANNER, app_name=launcher.APP_NAME))

    async def run():
        return await program.run(
            dspy_lm(lm, max_tokens=256),
            deadline=Deadline(60_000),
            stage="reply",
            budget_s=50.0,
            dialog_history="",
            user_input="最近好累，帮我把明天的事排一排",
        )

    asyncio.run(run())
    assert lm.replies and lm.replies[0].finish_reason == "stop"
    jsonschema.validate(json.loads(lm.replies[0].text), program.schema)
