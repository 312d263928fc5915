"""How execution's outcome ends a frame: a write request behind the gate, a selection, a result, or an error —
each an event with its logged message, committed with the frame."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from engine.conversation.execution import AgentFailed, NeedsSelection, Outcome, Proposal, Shown
from engine.deadline import Deadline
from engine.errors import BatonError
from protocol.agents import ExecutionLayerInput
from protocol.http_chat import ChatResponse
from protocol.rest import WriteRequestCreate, WriteRequestCreated
from protocol.store import StoredTimeRange
from protocol.ws import (
    ConfirmationRequiredPayload,
    ErrorPayload,
    ExecutionResultPayload,
    SelectionCandidate,
    SelectionRequiredPayload,
)
from serve_app.ws.context import Caller, ExecutionError, summary
from serve_app.ws.log import Outbox

if TYPE_CHECKING:  # the agent calls this module; this module calls back its commit
    from serve_app.ws.agent import ConversationAgent


class AgentProposalInvalid(BatonError):
    code = "agent_contract"


def _stored_range(inp: ExecutionLayerInput) -> StoredTimeRange:
    return StoredTimeRange(start_at=inp.time_range.start_at, end_at=inp.time_range.end_at, source=inp.time_range.source)


async def finish(
    agent: ConversationAgent,
    caller: Caller,
    out: Outbox,
    inp: ExecutionLayerInput,
    outcome: Outcome,
    deadline: Deadline,
    response: ChatResponse | None,
) -> None:
    names: dict[str, Any] = dict(target_agent_name=inp.target_agent_name, target_function_name=inp.target_function_name)
    if isinstance(outcome, Proposal):
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
                "confirmation",
                "assistant",
                write.preview_text,
                message_kind="confirmation_request",
                write_request_id=request.write_request_id,
                **names,
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
                ),
                message,
                after_commit=True,
            )

        try:
            await agent.commit(out, deadline, write=write, source_message_id=inp.source_message_id, created=created)
        except BatonError as exc:
            raise ExecutionError(exc) from exc
        return
    if isinstance(outcome, NeedsSelection):
        message = out.message(
            "selection",
            "assistant",
            outcome.question_text,
            message_kind="selection_required",
            time_range=_stored_range(inp),
            **names,
            parsed_params={
                "execution": inp.model_dump(mode="json", exclude={"recent_messages"}),
                "candidate_ids": [str(c.id) for c in outcome.candidates],
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
            "result",
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
        message = out.message("error", "assistant", outcome.message, message_kind="error", **names)
        await out.emit("execution.error", ErrorPayload(code="agent_failed", message=outcome.message), message)
    await agent.commit(out, deadline)
