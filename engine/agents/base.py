"""What every sub-agent is to the registry (SubAgent), the envelope builders they share, and the input checks."""

from __future__ import annotations

from datetime import tzinfo
from typing import Any, Protocol

from engine.errors import BatonError, InvalidInput
from protocol.agents import AgentFunctionDefinition, AgentName, AgentResponseEnvelope, CandidateItem, SubAgentInputBase


class UnknownAgentFunction(BatonError):
    code = "unknown_function"


class SubAgent(Protocol):
    """A sub-agent: its capability table and one entry point; it never reads or writes the store itself."""

    name: AgentName

    def definitions(self) -> list[AgentFunctionDefinition]: ...

    async def run(self, function: str, inp: SubAgentInputBase) -> AgentResponseEnvelope: ...


def zone(inp: SubAgentInputBase) -> tzinfo:
    """The user's time zone: the one `inp.now` carries."""
    if inp.now.tzinfo is None:
        raise InvalidInput("now needs a time zone", field="now")
    return inp.now.tzinfo


def unknown(agent: str, function: str) -> UnknownAgentFunction:
    return UnknownAgentFunction(f"{agent} has no function {function!r}", field="target_function_name")


def reply(
    agent: AgentName, function: str, result: dict[str, Any], *, db_action: dict[str, Any] | None = None
) -> AgentResponseEnvelope:
    """A successful answer; a proposed write always waits for the user's confirmation (seed 002)."""
    return AgentResponseEnvelope(
        agent_name=agent,
        function_name=function,
        isNeedUser=db_action is not None,
        isDisplayResult=True,
        isError=False,
        result=result,
        db_action=db_action,
    )


def failure(agent: AgentName, function: str, message: str, **result: Any) -> AgentResponseEnvelope:
    """An answer that tells the user (in Chinese) what is missing; it proposes no write."""
    return AgentResponseEnvelope(
        agent_name=agent,
        function_name=function,
        isNeedUser=False,
        isDisplayResult=True,
        isError=True,
        result={"reply": message, **result},
        error_message=message,
    )


def the_one_candidate(inp: SubAgentInputBase) -> CandidateItem | None:
    """The single item execution resolved for an item-targeted function; None when it did not resolve one."""
    return inp.candidate_items[0] if len(inp.candidate_items) == 1 else None


def definition(
    agent: AgentName,
    function: str,
    description: str,
    *,
    required: list[str] | None = None,
    optional: list[str] | None = None,
    needs_candidates: bool,
    writes: bool = True,
) -> AgentFunctionDefinition:
    return AgentFunctionDefinition(
        agent_name=agent,
        function_name=function,
        required_fields=required or [],
        optional_fields=optional or [],
        description=description,
        needs_candidates=needs_candidates,
        writes=writes,
    )
