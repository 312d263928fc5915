"""The five sub-agents of seed 002 behind one registry; plain async Python, rule and template based.

Each agent reads only the facts execution hands it (SubAgentInputBase) and answers with an AgentResponseEnvelope;
a proposed write is a db_action the user confirms before the data module applies it.
"""

from engine.agents.base import SubAgent, UnknownAgentFunction
from engine.agents.registry import AgentContractViolation, AgentRegistry
from engine.agents.text import TextWriter

__all__ = ["AgentContractViolation", "AgentRegistry", "SubAgent", "TextWriter", "UnknownAgentFunction"]
