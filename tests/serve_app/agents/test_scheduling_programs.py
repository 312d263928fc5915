"""Seed 000's Scheduling chain on the served path with a `programs` backend (the real OpenAI client against a loopback
OpenAI-wire server, the real store): over the WebSocket and over HTTP chat-stream a planning request's texts come from
the programs and stream before the write proposal, which books nothing until it is confirmed; with the backend
failing, the draft is the one the same build writes without any backend."""

from __future__ import annotations

import json
import time
import uuid

from config.settings import load_settings
from protocol.http_chat import ChatRequest
from protocol.ws import WsEnvelope
from serve_app.agents.context import Caller
from serve_app.agents.dialogue import user_turn
from serve_app.http.chat_stream import QueueListener
from serve_app.state import AppState, ModelClients, build_state
from tests.support.fakes import CONFIG_DIR, FakeModelClient
from tests.support.openai_server import OpenAiWire, Script

PLAN = "打算下周开始每天晚上练半小时吉他"  # a habit over a period: an L2 draft with slots
ROUTED = {"catch_and_rephrase": "你想每天练吉他。", "ai_can_do": "在空闲时间排练习。", "task_level": "L2"}
DRAFTED = {"draft_plan": "每天晚饭后练半小时，从简单的和弦开始。", "constraints_and_missing_info": ""}


def answers(*objects: dict) -> list[Script]:
    return [Script(text=json.dumps(o, ensure_ascii=False)) for o in objects]


def state_of(db, tmp_path, base_url: str | None) -> AppState:
    llm: dict = {"use": {"planner": [], "social": [], "programs": [], "summariser": []}}
    if base_url is not None:
        llm["backends"] = {"qwen": {"base_url": base_url, "model": "m", "generates": True, "timeout_s": 2.0}}
        llm["use"]["programs"] = ["qwen"]
    settings = load_settings(CONFIG_DIR, {"BATON_PACK": "timeflow"}, {"llm": llm}, state_dir=tmp_path)
    # the encoder reads it as a schedule create; its words ask for a plan, so the chain takes it (engine/scheduling)
    return build_state(settings, ModelClients(nlu=FakeModelClient().sure(PLAN, "schedule_create")), db)


async def over_the_socket(state: AppState, name: str) -> tuple[list[WsEnvelope], uuid.UUID]:
    assert state.store is not None and state.conversation is not None
    user = await state.store.callers.shadow_user(name)
    sent: list[WsEnvelope] = []

    async def send(frame: WsEnvelope) -> None:
        sent.append(frame)

    await user_turn(
        state.conversation,
        Caller(user=user, key=name, pack="timeflow"),
        client_message_id=uuid.uuid4().hex,
        modality="text",
        raw_content=PLAN,
        source_url=None,
        arrived=time.time(),
        send=send,
    )
    return sent, user.id


async def booked(db, user_id: uuid.UUID) -> tuple[int, int, list[str]]:
    async with db.connection() as conn:
        items = await conn.fetchval("SELECT count(*) FROM task_items WHERE user_id = $1", user_id)
        goals = await conn.fetchval("SELECT count(*) FROM long_goals WHERE user_id = $1", user_id)
        requests = await conn.fetch("SELECT status FROM write_requests WHERE user_id = $1", user_id)
    return items, goals, [r["status"] for r in requests]


async def test_over_the_socket_the_programs_write_the_draft_it_streams_first_and_nothing_is_booked(db, tmp_path):
    wire = await OpenAiWire(then=answers(ROUTED, DRAFTED)).start()
    try:
        sent, user_id = await over_the_socket(state_of(db, tmp_path, wire.base_url), "plans-with-programs")
    finally:
        await wire.stop()
    types = [f.type for f in sent]
    assert "execution.delta" in types and "write.confirmation_required" in types
    assert types.index("execution.delta") < types.index("write.confirmation_required"), "the text streams first"
    deltas = "".join(f.payload["text"] for f in sent if f.type == "execution.delta")
    proposal = next(f.payload for f in sent if f.type == "write.confirmation_required")
    assert deltas.startswith(DRAFTED["draft_plan"]) and proposal["preview_text"].startswith(deltas)
    assert proposal["scheduling"]["texts_by"] == "qwen" and proposal["scheduling"]["slots"]
    assert len(wire.requests) == 2, "SchedulingRouter, then DraftPlan (nothing was missing: no AskQuestion)"
    assert "你想每天练吉他" in json.dumps(wire.requests[1], ensure_ascii=False), "the router's output reached DraftPlan"
    assert await booked(db, user_id) == (0, 0, ["pending"]), "a proposal, not a booking"


async def test_over_http_chat_stream_the_same_draft_streams_as_delta_events(db, tmp_path):
    wire = await OpenAiWire(then=answers(ROUTED, DRAFTED)).start()
    try:
        state = state_of(db, tmp_path, wire.base_url)
        assert state.agent_chat is not None
        listener = QueueListener()
        response = await state.agent_chat.chat(
            ChatRequest(user_id="plans-over-http", text=PLAN),
            authorization=None,
            arrived=time.time(),
            listener=listener,
        )
    finally:
        await wire.stop()
    deltas = []
    while not listener.events.empty():
        event = listener.events.get_nowait()
        if event is not None and event.event == "delta":
            deltas.append(event.text)
    assert deltas and "".join(deltas).startswith(DRAFTED["draft_plan"])
    agent = response.agent
    assert agent is not None and agent.status == "waiting_confirmation"
    assert agent.scheduling is not None and agent.scheduling.texts_by == "qwen"
    assert response.reply.startswith("".join(deltas))


async def test_a_failing_backend_leaves_the_draft_the_build_without_one_writes(db, tmp_path):
    wire = await OpenAiWire(script=Script(status=500)).start()
    try:
        failing, _ = await over_the_socket(state_of(db, tmp_path, wire.base_url), "plans-backend-down")
    finally:
        await wire.stop()
    without, _ = await over_the_socket(state_of(db, tmp_path, None), "plans-without-backend")
    assert "execution.delta" not in [f.type for f in failing]
    drafts = [next(f.payload for f in sent if f.type == "write.confirmation_required") for sent in (failing, without)]
    assert drafts[0]["scheduling"] == drafts[1]["scheduling"] and drafts[0]["scheduling"]["texts_by"] == "template"
    assert drafts[0]["preview_text"] == drafts[1]["preview_text"]
    assert wire.requests, "the backend was asked"
