"""DSPy programs over the Planner deployment (seed 000's Time Compass signatures, seed 002's perception decision,
seed 003's social responder).

Each program is a `dspy.Predict` over a signature, run with the JSON adapter inside `lm_call(...)`, so its output is
constrained by a JSON schema of the signature's output fields (vLLM structured outputs; what must come from a closed
set — a pipeline module, an agent, a function, a task level — is an enum), and checked again before anyone uses
it: a program returns its validated output, or None when the model was late, failed, or said something invalid.
Nothing a program returns has run anything; the callers decide.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, conlist, create_model

from engine.deadline import Deadline, StageTimeout
from engine.llm.dspy_engine import LmCall, lm_call
from engine.llm.lm import PRIORITY_INTERACTIVE

if TYPE_CHECKING:
    import dspy

logger = logging.getLogger(__name__)
MAX_TEXT_CHARS = 200


class InteractionContext(BaseModel):
    """What seed 000's modules pass each other (its InteractionContext)."""

    user_input: str
    dialog_history: str = ""
    pipeline: list[str] = []
    current_pipeline_index: int = 0
    previous_signature_output: dict[str, Any] = {}
    time_interval_data: str | None = None
    emotion_state: str | None = None
    task_level: str | None = None


def _signatures() -> dict[str, Any]:
    """Seed 000's and seed 002's signatures (built on first use: dspy is imported lazily).

    dspy ships no type information, so `dspy.Signature` is Any to mypy: each subclass says so (misc)."""
    import dspy

    class Router(dspy.Signature):  # type: ignore[misc]
        """判断使用者意图，决定后续 pipeline。"""

        dialog_history: str = dspy.InputField(desc="对话历史")
        user_input: str = dspy.InputField(desc="使用者输入")
        pipeline_description: str = dspy.OutputField(desc="1~3 句话描述接下来的步骤")
        pipeline: list[str] = dspy.OutputField(desc="要执行的模组，按顺序")

    class EmotionSupport(dspy.Signature):  # type: ignore[misc]
        """温柔的情绪安抚：正常化感受，自然衔接后续步骤；不声称做了任何事。"""

        interaction_context: InteractionContext = dspy.InputField()
        emotion_reply: str = dspy.OutputField(desc="温柔、正常化感受的回应")

    class SummaryWriter(dspy.Signature):  # type: ignore[misc]
        """区间回顾：只用给出的数据，不编造。"""

        interaction_context: InteractionContext = dspy.InputField()
        time_interval_data: str = dspy.InputField()
        summary_text: str = dspy.OutputField(desc="总结文本")

    class SchedulingRouter(dspy.Signature):  # type: ignore[misc]
        """任务等级判断：L1 想法、L2 方案、L3 行动。"""

        interaction_context: InteractionContext = dspy.InputField()
        catch_and_rephrase: str = dspy.OutputField(desc="重述意图")
        ai_can_do: str = dspy.OutputField(desc="AI 可做的动作摘要")
        task_level: str = dspy.OutputField(desc="L1/L2/L3")

    class DraftPlan(dspy.Signature):  # type: ignore[misc]
        """L2 方案生成。"""

        interaction_context: InteractionContext = dspy.InputField()
        draft_plan: str = dspy.OutputField(desc="草案说明（含候选时段）")
        constraints_and_missing_info: str = dspy.OutputField(desc="缺资讯、假设、风险；没有就留空")

    class DraftAction(dspy.Signature):  # type: ignore[misc]
        """L3 行动生成。"""

        interaction_context: InteractionContext = dspy.InputField()
        action_description: str = dspy.OutputField(desc="可执行的行动描述")
        start_instructions: str = dspy.OutputField(desc="首步骤指南")
        constraints_and_missing_info: str = dspy.OutputField(desc="缺资讯；没有就留空")

    class AskQuestion(dspy.Signature):  # type: ignore[misc]
        """资讯不足时追问。"""

        constraints_and_missing_info_from_draft: str = dspy.InputField()
        interaction_context: InteractionContext = dspy.InputField()
        questions: str = dspy.OutputField(desc="追问题目")
        next_steps_suggestion: str = dspy.OutputField(desc="下一步建议")

    class Perception(dspy.Signature):  # type: ignore[misc]
        """把用户这句话理解成交给哪个子代理的哪个功能，参数只填用户说出的。"""

        recent_messages: str = dspy.InputField(desc="最近的对话")
        user_input: str = dspy.InputField()
        capabilities: str = dspy.InputField(desc="子代理和功能")
        target_agent_name: str = dspy.OutputField()
        target_function_name: str = dspy.OutputField()
        parsed_params: dict[str, Any] = dspy.OutputField()
        time_range: dict[str, str] | None = dspy.OutputField(desc="{start, end} ISO 8601，或 null")
        missing_fields: list[str] = dspy.OutputField()

    class SocialReply(dspy.Signature):  # type: ignore[misc]
        """闲聊回复（seed 003 §10.3）：简短、口语、一两句话；绝不说做了什么操作。"""

        user_input: str = dspy.InputField()
        reply: str = dspy.OutputField(desc="不超过五十个字")

    return {
        s.__name__: s
        for s in (
            Router,
            EmotionSupport,
            SummaryWriter,
            SchedulingRouter,
            DraftPlan,
            DraftAction,
            AskQuestion,
            Perception,
            SocialReply,
        )
    }


_SIGNATURES: dict[str, Any] = {}


def signature(name: str) -> Any:
    if not _SIGNATURES:
        _SIGNATURES.update(_signatures())
    return _SIGNATURES[name]


def output_schema(sig: Any, overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON schema of `sig`'s output fields as one object (the JSON adapter's answer), every field required;
    `overrides` replace a field's type (a Literal for a closed set)."""
    fields: dict[str, Any] = {
        name: ((overrides or {}).get(name, f.annotation), ...) for name, f in sig.output_fields.items()
    }
    output = create_model(f"{sig.__name__}Output", **fields)
    schema: dict[str, Any] = output.model_json_schema()
    schema.pop("title", None)
    schema["additionalProperties"] = False
    for prop in schema["properties"].values():
        if "const" in prop:  # a closed set of one value: an enum every structured-output backend reads
            prop["enum"] = [prop.pop("const")]
        if prop.get("type") == "string" and "enum" not in prop:
            prop["maxLength"] = MAX_TEXT_CHARS  # a text field ends: a small model may otherwise ramble to max_tokens
    return schema


def closed(values: list[str]) -> Any:
    """A type whose values are `values` only (the schema's enum)."""
    return Literal[tuple(values)]


@dataclass
class Program:
    """One signature, run with a deadline, a schema and a `check(output) -> reason | None` of what no schema says."""

    name: str
    overrides: dict[str, Any] = field(default_factory=dict)
    check: Callable[[dict[str, Any]], str | None] | None = None
    max_tokens: int | None = None

    def __post_init__(self) -> None:
        self.signature = signature(self.name)
        self.schema = output_schema(self.signature, self.overrides)

    async def run(
        self,
        lm: dspy.LM,
        *,
        deadline: Deadline,
        stage: str,
        budget_s: float,
        priority: int = PRIORITY_INTERACTIVE,
        **inputs: Any,
    ) -> dict[str, Any] | None:
        """The validated outputs, or None (late, failed, unparseable or refused by the check; logged)."""
        import dspy

        predict = dspy.Predict(self.signature)
        try:
            with (
                lm_call(
                    LmCall(deadline=deadline, stage=stage, budget_s=budget_s, schema=self.schema, priority=priority)
                ),
                dspy.context(lm=lm, adapter=dspy.JSONAdapter()),
            ):
                out = await predict.acall(
                    **inputs, **({"config": {"max_tokens": self.max_tokens}} if self.max_tokens else {})
                )
        except Exception as exc:  # noqa: BLE001 — a late or failed program is a template answer, never a failed turn
            if _caused_by(exc, StageTimeout):  # DSPy wraps what the engine raised
                logger.info("%s: late", self.name)
            else:
                logger.warning("%s failed", self.name, exc_info=True)
            return None
        values = {k: getattr(out, k) for k in self.signature.output_fields}
        reason = self.check(values) if self.check is not None else None
        if reason:
            logger.info("%s: output refused: %s", self.name, reason)
            return None
        return values


def _caused_by(exc: BaseException | None, kind: type[BaseException]) -> bool:
    while exc is not None:
        if isinstance(exc, kind):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def router(modules: list[str]) -> Program:
    """Seed 000's Router: the pipeline's modules come from `modules` only, each once."""

    def check(out: dict[str, Any]) -> str | None:
        pipeline = out["pipeline"]
        if not pipeline or any(m not in modules for m in pipeline) or len(set(pipeline)) != len(pipeline):
            return f"pipeline {pipeline} is not a sequence of distinct modules of {modules}"
        return None

    pipeline = conlist(closed(modules), min_length=1, max_length=len(modules))
    return Program("Router", {"pipeline": pipeline}, check)


def perception(functions: dict[str, list[str]]) -> Program:
    """Seed 002's perception decision, the agent and function from the registry's table (`agent -> functions`); the
    function must be the agent's own (the schema cannot say which belongs to which)."""

    def check(out: dict[str, Any]) -> str | None:
        if out["target_function_name"] not in functions.get(out["target_agent_name"], []):
            return f"{out['target_agent_name']} has no function {out['target_function_name']}"
        return None

    names = sorted({f for fs in functions.values() for f in fs})
    return Program(
        "Perception", {"target_agent_name": closed(sorted(functions)), "target_function_name": closed(names)}, check
    )
