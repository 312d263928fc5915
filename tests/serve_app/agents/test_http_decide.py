"""The REST decide of a write request: one the conversation proposed goes through the `write.decide` frame (which
runs the message's steps after it, as fill-slots' 确认 does); any other is left to the gate alone."""

from __future__ import annotations

import uuid
from types import SimpleNamespace

from engine.deadline import Deadline
from protocol.rest import WriteDecisionRequest
from serve_app.agents import frames
from serve_app.agents.http_turns import AgentChat

USER = SimpleNamespace(id=uuid.uuid4())


class Agent:
    """What AgentChat.decide asks of the conversation agent: a deadline and one read of the log."""

    def __init__(self, proposed: bool) -> None:
        self.proposed = proposed

    def deadline(self, modality: str, arrived: float) -> Deadline:
        return Deadline(10_000, started=arrived)

    async def lookup(self, deadline, read):
        return object() if self.proposed else None


async def test_a_write_the_conversation_proposed_is_decided_by_the_frame_that_runs_the_steps_after_it(monkeypatch):
    seen = []

    async def decide(agent, caller, payload, arrived, send):
        seen.append((caller.user, caller.key, payload))
        return "the gate's result"

    monkeypatch.setattr(frames, "decide", decide)
    request_id = uuid.uuid4()
    body = WriteDecisionRequest(decision="confirmed", idempotency_key="k1", payload_hash="a" * 64)
    result = await AgentChat(Agent(proposed=True), callers=None).decide(request_id, body, USER, arrived=0.0)
    assert result == "the gate's result"
    [(user, key, payload)] = seen
    assert user is USER and key == str(USER.id)
    assert (payload.write_request_id, payload.decision, payload.idempotency_key) == (request_id, "confirmed", "k1")
    assert payload.payload_hash == "a" * 64


async def test_a_write_no_conversation_proposed_is_left_to_the_gate(monkeypatch):
    async def decide(*args):
        raise AssertionError("not through the frame")

    monkeypatch.setattr(frames, "decide", decide)
    body = WriteDecisionRequest(decision="rejected", idempotency_key="k2")
    assert await AgentChat(Agent(proposed=False), callers=None).decide(uuid.uuid4(), body, USER, arrived=0.0) is None
