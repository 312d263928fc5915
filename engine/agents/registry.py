"""The sub-agents' registry: their capability tables, the planner's rendering of them, and deterministic dispatch.

The program, not a model, calls the agents (seed 002): execution names an agent function the table lists and
dispatch runs it and holds the answer to the envelope contract before anyone acts on it.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import ValidationError

from engine.agents.base import SubAgent, UnknownAgentFunction, unknown
from engine.agents.feedback import FeedbackAgent
from engine.agents.long_task_split import LongTaskSplitAgent
from engine.agents.replan import ReplanAgent
from engine.agents.review import ReviewAgent
from engine.agents.schedule_todo import ScheduleTodoAgent
from engine.agents.scheduling import SchedulingAgent
from engine.agents.text import TextWriter
from engine.errors import BatonError
from engine.scheduling import SchedulingChain
from protocol.agents import AgentFunctionDefinition, AgentName, AgentResponseEnvelope, SubAgentInputBase
from protocol.rest import WriteRequestCreate


class AgentContractViolation(BatonError):
    """A sub-agent's answer breaks the envelope contract; execution reports it as execution.error."""

    code = "agent_contract"


class AgentRegistry:
    """The sub-agents keyed by AgentName, each with its capability table."""

    def __init__(self, agents: Iterable[SubAgent]) -> None:
        self._agents: dict[AgentName, SubAgent] = {}
        self._definitions: dict[tuple[str, str], AgentFunctionDefinition] = {}
        for agent in agents:
            if agent.name in self._agents:
                raise ValueError(f"agent {agent.name} is registered twice")
            self._agents[agent.name] = agent
            for row in agent.definitions():
                if row.agent_name != agent.name:
                    raise ValueError(f"{agent.name} lists a function of {row.agent_name}")
                self._definitions[(row.agent_name, row.function_name)] = row

    @classmethod
    def default(cls, writer: TextWriter | None = None, scheduling: SchedulingChain | None = None) -> AgentRegistry:
        """The five sub-agents of seed 002 and seed 000's Scheduling chain; `writer` (optional) rephrases the review
        and the plan overview; `scheduling`: the chain with its texts' writer (default: templates)."""
        return cls(
            [
                ScheduleTodoAgent(),
                FeedbackAgent(),
                ReplanAgent(),
                ReviewAgent(writer),
                LongTaskSplitAgent(writer),
                SchedulingAgent(scheduling),
            ]
        )

    def agent(self, name: AgentName) -> SubAgent:
        """The registered agent itself (the split agent's questions/prefill/parse_answer live there)."""
        if name not in self._agents:
            raise UnknownAgentFunction(f"no agent named {name!r}", field="target_agent_name")
        return self._agents[name]

    def extra_s(self, name: str) -> float:
        """How much longer than a template agent's call one of `name`'s may take (its texts wait on an LLM)."""
        agent = self._agents.get(name)  # type: ignore[call-overload]  # any name: an unknown one takes no longer
        return float(getattr(agent, "extra_s", 0.0))

    def definitions(self) -> list[AgentFunctionDefinition]:
        """Every agent's capability table, in registration order."""
        return list(self._definitions.values())

    def definition(self, agent: str, function: str) -> AgentFunctionDefinition:
        """The row for `agent.function`; UnknownAgentFunction when no agent lists it."""
        row = self._definitions.get((agent, function))
        if row is None:
            raise unknown(agent, function)
        return row

    def render_capabilities(self) -> str:
        """The capability table as Chinese markdown for a planner's prompt: one line per function."""
        lines = ["可调用的子 Agent 函数（每行一个：agent.function — 说明；必填；可选；候选事项；写入）："]
        for row in self._definitions.values():
            required = "、".join(row.required_fields) or "无"
            optional = "、".join(row.optional_fields) or "无"
            candidates = "需要执行层先查出候选事项" if row.needs_candidates else "不需要候选事项"
            writes = "会产生待用户确认的写入" if row.writes else "只读不写"
            lines.append(
                f"- `{row.agent_name}.{row.function_name}` — {row.description}；必填：{required}；"
                f"可选：{optional}；{candidates}；{writes}"
            )
        return "\n".join(lines)

    async def dispatch(self, agent: str, function: str, inp: SubAgentInputBase) -> AgentResponseEnvelope:
        """Run `agent.function` on `inp` and check its answer: it names the function called, and a db_action is a
        valid write-request body (no idempotency_key) of a writing function with isNeedUser true.

        Raises UnknownAgentFunction for a function no agent lists, AgentContractViolation for a broken answer."""
        row = self.definition(agent, function)
        envelope = await self._agents[row.agent_name].run(function, inp)
        _check(row, envelope)
        return envelope


def _check(row: AgentFunctionDefinition, envelope: AgentResponseEnvelope) -> None:
    called = f"{row.agent_name}.{row.function_name}"
    if (envelope.agent_name, envelope.function_name) != (row.agent_name, row.function_name):
        raise AgentContractViolation(f"{called} answered as {envelope.agent_name}.{envelope.function_name}")
    action = envelope.db_action
    if action is None:
        return
    if not envelope.isNeedUser:
        raise AgentContractViolation(f"{called} returned a db_action with isNeedUser false", field="db_action")
    if not row.writes:
        raise AgentContractViolation(f"{called} is read-only but returned a db_action", field="db_action")
    if "idempotency_key" in action:
        raise AgentContractViolation(f"{called} set idempotency_key; execution assigns it", field="db_action")
    try:
        WriteRequestCreate.model_validate(action)
    except ValidationError as exc:
        raise AgentContractViolation(
            f"{called} returned an invalid db_action: {exc.errors()[0]['msg']}", field="db_action"
        ) from exc
