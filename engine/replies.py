"""The response of a turn built from the session, and the decision a turn hands to an agent."""

from __future__ import annotations

from typing import Any

from engine.pack import Intent
from engine.session import SessionState
from protocol.http_chat import ChatResponse, Decision, TimeRange, TurnStatus


def reply(
    session: SessionState, status: TurnStatus, text: str, *, intent: str | None, decision: Decision | None = None
) -> ChatResponse:
    return ChatResponse(
        session_id=session.session_id,
        reply=text,
        status=status,
        intent=intent,
        slots=dict(session.slots),
        pending_slots=list(session.pending_slots),
        decision=decision,
    )


def decision(intent_ids: list[str], params: dict[str, Any], intent: Intent | None) -> Decision:
    """What a turn decided without running a plugin: the intents, the agent and function of `intent`, the params
    and the time range among them."""
    when = next((v for v in params.values() if isinstance(v, dict) and {"start", "end"} <= v.keys()), None)
    return Decision(
        intents=intent_ids,
        agent=intent.agent if intent else None,
        function=intent.action if intent else None,
        params=params,
        time_range=TimeRange(**when) if when else None,
    )
