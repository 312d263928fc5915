"""The GPU path's language model, built without a GPU: Ray Serve LLM's LLMServer from config/serve_gpu.yaml, and
the requests Baton sends it. Runs in the LLM venv (`ray.serve.llm` imports only where vLLM is installed)."""

from __future__ import annotations

from pathlib import Path

import yaml

from engine.llm.lm import PRIORITY_INTERACTIVE, LmRequest
from serve_app.args import PLANNER
from serve_app.replicas.serve_llm import ServeLlmLanguageModel, serve_llm_deployment

ROOT = Path(__file__).resolve().parents[2]


def gpu_app() -> dict:
    config = yaml.safe_load((ROOT / "config" / "serve_gpu.yaml").read_text(encoding="utf-8"))
    return config["applications"][0]


def test_the_gpu_config_builds_a_serve_llm_planner_for_a_qwen_model_on_its_accelerator():
    app = gpu_app()
    args = app["args"]
    assert args["planner"] == "serve_llm"
    llm_config = args["llm_config"]
    assert "Qwen" in llm_config["model_loading_config"]["model_source"]
    options = {d["name"]: {k: v for k, v in d.items() if k != "name"} for d in app["deployments"]}.get(PLANNER, {})
    built = serve_llm_deployment(llm_config, options)
    deployment = built._bound_deployment
    assert deployment.name == PLANNER
    bundles = deployment._replica_config.placement_group_bundles
    gpus = sum(b.get("GPU", 0) for b in bundles)
    assert gpus == llm_config["engine_kwargs"].get("tensor_parallel_size", 1), "whole GPUs for vLLM"
    assert any(f"accelerator_type:{llm_config['accelerator_type']}" in b for b in bundles)


class Handle:
    def options(self, **_):
        return self


def test_a_plan_request_carries_its_schema_priority_and_id_to_the_llm_server():
    lm = ServeLlmLanguageModel(Handle(), "qwen2.5-7b-instruct")
    schema = {"type": "object", "properties": {"steps": {"type": "array"}}, "required": ["steps"]}
    request = lm.chat_request(
        LmRequest(
            messages=[{"role": "system", "content": "plan"}, {"role": "user", "content": "开窗"}],
            json_schema=schema,
            max_tokens=160,
            temperature=0.0,
            request_id="llm-1",
            priority=PRIORITY_INTERACTIVE,
        )
    )
    assert request.model == "qwen2.5-7b-instruct" and request.max_tokens == 160 and request.priority == 0
    assert request.request_id == "llm-1" and not request.stream
    assert request.response_format.type == "json_schema"
    assert request.response_format.json_schema.json_schema == schema
