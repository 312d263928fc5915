"""Which backend each purpose gets (`llm.use`), and the engine parts built over them: the planners in order, the social
responder or today's local writer, the sub-agents' summariser through DSPy over a loopback OpenAI-wire endpoint."""

from __future__ import annotations

import json

from config.settings import load_settings
from engine.llm.replies import ReplyWriter
from engine.llm.responder import SocialResponder
from engine.pack import find_pack, load_pack
from serve_app.llm_backends.registry import LlmBackends
from tests.support.fakes import CONFIG_DIR, FakeLlm
from tests.support.openai_server import OpenAiWire, Script


class RoutedFake(FakeLlm):
    def __init__(self) -> None:
        super().__init__()
        self.routes: list[str] = []

    def for_route(self, route: str) -> RoutedFake:
        self.routes.append(route)
        return self

    async def abort(self, request_id: str) -> None:
        pass


def settings(tmp_path, **use):
    qwen = {"base_url": "http://127.0.0.1:9/v1", "model": "m", "generates": True}
    over = {"llm": {"backends": {"qwen": qwen}, "use": use}}
    return load_settings(CONFIG_DIR, {}, over, state_dir=tmp_path)


def test_each_purpose_gets_its_chain_local_only_where_deployed_and_trusted(tmp_path):
    local = RoutedFake()
    s = settings(tmp_path, planner=["qwen", "local"], social=["local", "qwen"])
    backends = LlmBackends(s, local)
    assert [n for n, _ in backends.chain("planner")] == ["qwen", "local"]
    assert [n for n, _ in backends.chain("social")] == ["qwen"]  # local writes for users only with generate_replies
    assert [n for n, _ in LlmBackends(s, None).chain("planner")] == ["qwen"]  # no Planner deployed
    pack_dir = find_pack("cockpit", shipped_dir=s.packs_dir, state_dir=s.state_dir)
    planners = backends.planners(pack_dir, load_pack(pack_dir))
    assert [(p.backend, p.name) for p in planners] == [("qwen", "llm:qwen"), ("local", "llm")]
    assert isinstance(backends.replies(), SocialResponder) and backends.summariser() is None
    # the same endpoint for every purpose is one client with one concurrency bound
    assert backends.chain("planner")[0][1]._slots is backends.chain("social")[0][1]._slots


def test_without_backends_the_local_writer_is_todays(tmp_path):
    s = load_settings(CONFIG_DIR, {}, {"llm": {"generate_replies": True}}, state_dir=tmp_path)
    local = RoutedFake()
    backends = LlmBackends(s, local)
    assert isinstance(backends.replies(), ReplyWriter) and backends.summariser() is not None
    assert local.routes == ["reply", "summary"]
    assert LlmBackends(load_settings(CONFIG_DIR, {}, state_dir=tmp_path), local).replies() is None


async def test_the_summariser_writes_through_dspy_over_the_wire(tmp_path):
    wire = await OpenAiWire(script=Script(text=json.dumps({"summary_text": "这周完成了3项，计划5项。"}))).start()
    try:
        qwen = {"base_url": wire.base_url, "model": "m", "generates": True}
        s = load_settings(
            CONFIG_DIR, {}, {"llm": {"backends": {"qwen": qwen}, "use": {"summariser": ["qwen"]}}}, state_dir=tmp_path
        )
        writer = LlmBackends(s, None).summariser()
        assert writer is not None
        text = await writer.write("写复盘", facts={"done": 3, "planned": 5}, timeout_s=5.0)
        assert text == "这周完成了3项，计划5项。" and wire.requests[0]["model"] == "m"
    finally:
        await wire.stop()


async def test_a_long_history_is_summarised_by_the_summariser_backend_before_the_cloud_plans(tmp_path):
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from engine.deadline import Deadline

    summary, planner = (
        await OpenAiWire(script=Script(text="用户此前问过车窗和音乐。")).start(),
        await OpenAiWire(script=Script(text=json.dumps({"steps": [{"intent_id": "cabin_window_open"}]}))).start(),
    )
    try:
        backends = {
            "sum": {"base_url": summary.base_url, "model": "s", "generates": True},
            "qwen": {"base_url": planner.base_url, "model": "p"},
        }
        s = load_settings(
            CONFIG_DIR,
            {},
            {"llm": {"backends": backends, "use": {"planner": ["qwen"], "summariser": ["sum"]}}},
            state_dir=tmp_path,
        )
        pack_dir = find_pack("cockpit", shipped_dir=s.packs_dir, state_dir=s.state_dir)
        (llm,) = LlmBackends(s, None).planners(pack_dir, load_pack(pack_dir))
        history = [
            {"role": "user" if i % 2 == 0 else "assistant", "content": f"第{i}句：" + "车窗和音乐的事情" * 25}
            for i in range(40)
        ]
        assert sum(len(m["content"]) for m in history) > s.compaction.max_chars
        outcome = await llm.plan(
            "打开车窗",
            deadline=Deadline(5000.0),
            budget_s=2.4,
            history=history,
            now=datetime.now(ZoneInfo(s.timezone)),
        )
        assert outcome.accepted and outcome.planner == "llm:qwen"
        asked = planner.requests[0]["messages"]
        assert any(m["content"] == "此前对话摘要：用户此前问过车窗和音乐。" for m in asked)
        assert len(asked) < len(history) and "摘要" in summary.requests[0]["messages"][0]["content"]
    finally:
        await summary.stop()
        await planner.stop()
