"""A turn's events as the HTTP response: ChatResponse.agent names the pending write, the selection, the
clarification and each step's result; a turn that ran no agent keeps the engine's response; the OpenAPI says so."""

from __future__ import annotations

import uuid

from protocol.http_chat import ChatResponse, TurnStatus
from protocol.ws import WsEnvelope
from serve_app.agents.wire import answered
from tests.support.fakes import Rig, api_for

HASH = "a" * 64


def _raw(kind: str, payload: dict) -> WsEnvelope:
    return WsEnvelope(type=kind, payload=payload)


TURN = {"status": "x", "reply": "r"}
DECIDED = ChatResponse(session_id="s", reply="将交给 schedule_todo_agent 处理", status=TurnStatus.decided)


def test_a_proposed_write_is_waiting_confirmation_with_its_write_request():
    write_id = uuid.uuid4()
    events = [
        _raw("dialogue.decision", {"target_agent_name": "schedule_todo_agent", "target_function_name": "create"}),
        _raw("execution.processing", {"stage": "calling_agent"}),
        _raw(
            "write.confirmation_required",
            {
                "write_request_id": str(write_id),
                "payload_hash": HASH,
                "preview_text": "新建日程：开会",
                "confirmation_payload": {},
                "expires_at": "2026-12-02T10:00:00+08:00",
                "turn": TURN,
            },
        ),
    ]
    response = answered(DECIDED, events, "s")
    assert response.status == TurnStatus.waiting_confirmation and response.reply == "新建日程：开会"
    agent = response.agent
    assert agent is not None and agent.status == "waiting_confirmation"
    assert agent.write_request is not None and agent.write_request.write_request_id == write_id
    assert agent.write_request.payload_hash == HASH and agent.target_agent_name == "schedule_todo_agent"


def test_a_decision_then_the_steps_it_resumed_report_each_step():
    steps = [
        {"step": 1, "agent_name": "feedback_agent", "function_name": "record", "status": "applied", "reply": ""},
        {"step": 2, "agent_name": "review_agent", "function_name": "review", "status": "completed", "reply": "x"},
    ]
    events = [
        _raw("write.applied", {"write_request_id": str(uuid.uuid4()), "status": "applied", "turn": TURN}),
        _raw("execution.result", {"reply": "本周完成 1 项", "turn": TURN}),
        _raw("execution.result", {"reply": "这条消息共 2 步", "result": {"agent_workflow": steps}, "turn": TURN}),
    ]
    response = answered(None, events, "s")
    assert response.status == TurnStatus.completed and response.reply == "这条消息共 2 步"
    assert response.agent is not None and len(response.agent.applied) == 1
    assert response.agent.results == ["本周完成 1 项", "这条消息共 2 步"]
    assert [(s.agent_name, s.status) for s in response.agent.steps] == [
        ("feedback_agent", "applied"),
        ("review_agent", "completed"),
    ]


def test_a_turn_that_ran_no_agent_keeps_the_engines_response():
    shown = ChatResponse(session_id="s", reply="你好呀", status=TurnStatus.social)
    response = answered(shown, [_raw("execution.result", {"reply": "你好呀", "turn": TURN})], "s")
    assert response == shown and response.agent is None


def test_the_openapi_documents_the_agent_turn_on_chat_responses():
    schemas = api_for(Rig().engine).openapi()["components"]["schemas"]
    assert schemas["ChatResponse"]["properties"]["agent"]["anyOf"][0]["$ref"] == "#/components/schemas/AgentTurn"
    assert {"write_request", "selection", "clarification", "steps", "status"} <= set(schemas["AgentTurn"]["properties"])
    assert {"write_request_id", "preview_text", "payload_hash", "expires_at"} <= set(
        schemas["PendingWrite"]["required"]
    )


def test_a_write_proposed_for_the_doable_part_says_first_what_is_not_done():
    """The partial-request rule on a pack with agents, as the HTTP turn answers it (serve_app/agents/http_turns.py):
    the write's preview ends the reply, after the sentence naming the part outside the catalog; said once."""
    from protocol.workflow import NotDone

    partial = Rig("timeflow").engine.partial
    not_done = [NotDone(text="帮我订一张机票", reason="outside_catalog")]
    said = partial.sentence(not_done)
    engine_response = DECIDED.model_copy(update={"reply": DECIDED.reply + said, "not_done": not_done})
    proposed = {
        "write_request_id": str(uuid.uuid4()),
        "payload_hash": HASH,
        "preview_text": "新建日程：开会",
        "confirmation_payload": {},
        "expires_at": "2026-12-02T10:00:00+08:00",
        "turn": TURN,
    }
    events = [
        _raw("dialogue.decision", {"target_agent_name": "schedule_todo_agent", "target_function_name": "create"}),
        _raw("write.confirmation_required", proposed),
    ]
    response = partial.tell(answered(engine_response, events, "s"), engine_response.not_done)
    assert said == "订一张机票不在我能帮你安排的范围里。"
    assert response.reply == said + "新建日程：开会" and response.not_done == not_done
    assert partial.tell(response, not_done).reply == response.reply  # said once
