"""An LLM backend's key travels like DATABASE_URL: the launcher hands it to Ray's processes as their environment, and a
replica's config loader reads it there; the Serve config, its runtime_env and the options Serve is given never hold
it, and neither does any response or log line of a turn that used the backend."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from ray.serve._private.build_app import build_app

from config.settings import load_settings
from protocol.http_chat import ChatRequest
from serve_app.llm_backends.registry import LlmBackends
from serve_app.ops.launcher import build_applications, load_serve_config, replica_environment
from serve_app.state import ModelClients, build_state
from tests.engine.test_workflow_escalation import GOOD, UTTERANCE, models
from tests.support.fakes import CONFIG_DIR
from tests.support.openai_server import OpenAiWire, Script

ROOT = Path(__file__).resolve().parents[3]
KEY = "sk-dashscope-9d8c7b6a5f4e3d2c"
QWEN = {"base_url": "https://dashscope.aliyuncs.com/compatible-mode/v1", "model": "qwen-plus"}


def test_the_launcher_hands_the_key_to_the_processes_never_to_a_serve_config(tmp_path):
    env = {"BATON_STATE_DIR": str(tmp_path), "DASHSCOPE_API_KEY": KEY}
    config = load_serve_config(ROOT / "config" / "serve_local.yaml", env)
    overrides = {"llm": {"backends": {"qwen": {**QWEN, "api_key_env": "DASHSCOPE_API_KEY"}}}}
    for app in config["applications"]:
        app["args"]["overrides"] = {**app["args"].get("overrides", {}), **overrides}
    assert replica_environment(config, env)["DASHSCOPE_API_KEY"] == KEY
    (target,) = build_applications(config)
    options = [
        {"ray_actor_options": d.ray_actor_options or {}, "config": d._deployment_config}
        for d in build_app(target.target, name="baton").deployments
    ]
    shown = json.dumps(config, default=str) + json.dumps(options, default=str)
    assert KEY not in shown and "DASHSCOPE_API_KEY" in shown  # the variable's name is config; its value is not


async def test_a_turn_planned_by_the_cloud_shows_its_key_nowhere(tmp_path, caplog):
    wire = await OpenAiWire(key=KEY, script=Script(text="```json\n" + json.dumps(GOOD) + "\n```")).start()
    try:
        caplog.set_level(logging.DEBUG)
        overrides = {
            "llm": {
                "backends": {"qwen": {"base_url": wire.base_url, "model": "qwen-plus", "api_key_env": "QWEN_KEY"}},
                "use": {"planner": ["qwen"]},
            },
            "budgets": {"turn_ms": {"llm": 3000}, "stages_ms": {"planner_llm": 2400}},
        }
        settings = load_settings(CONFIG_DIR, {"QWEN_KEY": KEY}, overrides, state_dir=tmp_path)
        state = build_state(settings, ModelClients(nlu=models()), None)
        response = await state.engine.chat(ChatRequest(user_id="u1", session_id="s1", text=UTTERANCE))
        # the real client, the real wire: the cloud's fenced plan, validated and grounded, ran
        assert response.workflow is not None and response.workflow.planner == "llm:qwen"
        assert wire.headers[0]["authorization"] == f"Bearer {KEY}"
        assert KEY not in response.model_dump_json() and KEY not in caplog.text
        assert KEY not in repr(settings) and KEY not in json.dumps(state.llm_metrics.__dict__, default=str)
        # no in-cluster planner: nothing to warm up, and an endpoint elsewhere is not waited on for readiness
        assert state.llm_planner is None
    finally:
        await wire.stop()


async def test_with_the_backend_down_the_turn_keeps_the_local_decision_marked(tmp_path):
    wire = await OpenAiWire(script=Script(status=503)).start()
    try:
        overrides = {
            "llm": {"backends": {"qwen": {"base_url": wire.base_url, "model": "m"}}, "use": {"planner": ["qwen"]}}
        }
        settings = load_settings(CONFIG_DIR, {}, overrides, state_dir=tmp_path)
        backends = LlmBackends(settings, None)
        assert [name for name, _ in backends.chain("planner")] == ["qwen"] and backends.replies() is None
        state = build_state(settings, ModelClients(nlu=models()), None)
        response = await state.engine.chat(ChatRequest(user_id="u1", session_id="s1", text=UTTERANCE))
        planner = response.routing_debug.planner
        assert (
            response.workflow is None and planner.llm.outcome == "error" and planner.llm.reasons == ["qwen: HTTP 503"]
        )
        assert response.timings.degraded == ["planner"] and len(wire.requests) == 1  # asked once, no retry
    finally:
        await wire.stop()
