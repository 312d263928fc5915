"""How the agent runner's outcomes end a frame: a write request behind the gate, a selection, a result, or an
error — each an event with its logged message, committed with the frame; a workflow of several steps that ran to
its end adds the result that says what each step did."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from engine.conversation.agent_runner import Run
from engine.conversation.execution import AgentFailed, NeedsSelection, Outcome, Proposal, Shown
from engine.deadline import Deadline
from engine.errors import BatonError
from protocol.agents import ExecutionLayerInput
from protocol.http_chat import ChatResponse
from protocol.rest import WriteRequestCreate, WriteRequestCreated
from protocol.scheduling import SchedulingDraft
from protocol.store import StoredTimeRange
from protocol.ws import (
    ConfirmationRequiredPayload,
    ErrorPayload,
    ExecutionResultPayload,
    SelectionCandidate,
    SelectionRequiredPayload,
)
from serve_app.agents.context import Caller, ExecutionError, summary
from serve_app.agents.log import Outbox
from serve_app.agents.steps import kept, report_summary

if TYPE_CHECKING:  # the agent calls this module; this module calls back its commit
    from serve_app.agents.agent import ConversationAgent


class AgentProposalInvalid(BatonError):
    code = "agent_contract"


def _stored_range(inp: ExecutionLayerInput) -> StoredTimeRange:
    return StoredTimeRange(start_at=inp.time_range.start_at, end_at=inp.time_range.end_at, source=inp.time_range.source)


async def finish(
    agent: ConversationAgent,
    caller: Caller,
    out: Outbox,
    run: Run,
    deadline: Deadline,
    response: ChatResponse | None,
) -> None:
    proposal: tuple[ExecutionLayerInput, Proposal, str] | None = None
    several = run.workflow.total > 1
    # a request partly outside the catalog: the frame's last result names what was not done (the decision said it)
    not_done = response.not_done if response is not None and not run.paused else []
    tail = agent.turns.engine.partial.sentence(not_done) if not_done else ""
    for n, (inp, outcome) in enumerate(run.ran):
        tag = f"@{len(out.events)}" if several else ""  # each step's messages get their own ids
        if isinstance(outcome, Proposal):
            proposal = (inp, outcome, tag)  # the run paused on it: the last outcome
        else:
            last = not several and n == len(run.ran) - 1
            told = replace(outcome, reply=outcome.reply + tail) if last and isinstance(outcome, Shown) else outcome
            await _shown(out, inp, told, deadline, response, tag, run)
    if several and not run.paused:
        await report_summary(out, run.workflow, deadline, f"summary@{len(out.events)}", tail=tail)
    if proposal is None:
        await agent.commit(out, deadline)
        return
    inp, outcome, tag = proposal
    await _propose(agent, out, inp, outcome, deadline, response, tag, run)


def _names(inp: ExecutionLayerInput) -> dict[str, Any]:
    return dict(target_agent_name=inp.target_agent_name, target_function_name=inp.target_function_name)


async def _propose(
    agent: ConversationAgent,
    out: Outbox,
    inp: ExecutionLayerInput,
    outcome: Proposal,
    deadline: Deadline,
    response: ChatResponse | None,
    tag: str,
    run: Run,
) -> None:
    try:
        write = WriteRequestCreate.model_validate(outcome.db_action)
    except ValidationError as exc:
        raise ExecutionError(
            AgentProposalInvalid(
                f"{inp.target_agent_name} proposed a write the gate cannot take: {exc.errors()[0].get('msg')}"
            )
        ) from exc

    async def created(request: WriteRequestCreated) -> None:
        confirmation = request.confirmation_payload
        message = out.message(
            f"confirmation{tag}",
            "assistant",
            write.preview_text,
            message_kind="confirmation_request",
            write_request_id=request.write_request_id,
            parsed_params=kept(run.workflow, inp),
            **_names(inp),
        )
        await out.emit(
            "write.confirmation_required",
            ConfirmationRequiredPayload(
                write_request_id=request.write_request_id,
                payload_hash=request.payload_hash,
                preview_text=write.preview_text,
                confirmation_payload=confirmation,
                expires_at=confirmation["expires_at"],
                turn=summary("waiting_write_confirmation", write.preview_text, deadline, response),
                scheduling=SchedulingDraft.of(outcome.response.result),
            ),
            message,
            after_commit=True,
        )

    try:
        await agent.commit(out, deadline, write=write, source_message_id=inp.source_message_id, created=created)
    except BatonError as exc:
        raise ExecutionError(exc) from exc


async def _shown(
    out: Outbox,
    inp: ExecutionLayerInput,
    outcome: Outcome,
    deadline: Deadline,
    response: ChatResponse | None,
    tag: str,
    run: Run,
) -> None:
    names = _names(inp)
    if isinstance(outcome, NeedsSelection):
        message = out.message(
            f"selection{tag}",
            "assistant",
            outcome.question_text,
            message_kind="selection_required",
            time_range=_stored_range(inp),
            **names,
            parsed_params={
                "execution": inp.model_dump(mode="json", exclude={"recent_messages"}),
                "candidate_ids": [str(c.id) for c in outcome.candidates],
                **kept(run.workflow, inp),
            },
        )
        await out.emit(
            "selection.required",
            SelectionRequiredPayload(
                interaction_id=message.id,
                question_text=outcome.question_text,
                candidates=[
                    SelectionCandidate(
                        id=c.id, title=c.title, start_at=c.start_at, end_at=c.end_at, item_type=c.item_type
                    )
                    for c in outcome.candidates
                ],
                turn=summary("waiting_selection", outcome.question_text, deadline, response),
            ),
            message,
        )
    elif isinstance(outcome, Shown):
        message = out.message(
            f"result{tag}",
            "assistant",
            outcome.reply,
            message_kind="execution_result",
            time_range=_stored_range(inp),
            **names,
        )
        await out.emit(
            "execution.result",
            ExecutionResultPayload(
                reply=outcome.reply,
                result=outcome.result,
                source_message_id=inp.source_message_id,
                turn=summary(outcome.status, outcome.reply, deadline, response),
            ),
            message,
        )
    else:
        assert isinstance(outcome, AgentFailed)
        message = out.message(f"error{tag}", "assistant", outcome.message, message_kind="error", **names)
        await out.emit("execution.error", ErrorPayload(code="agent_failed", message=outcome.message), message)
