"""The frames that continue a turn rather than start one: `selection.submit` / `selection.cancel` on a
`selection.required`, `write.decide` on a `write.confirmation_required`, and `transport.resume`."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from engine.conversation.agent_runner import start, summary_reply
from engine.deadline import Deadline
from engine.errors import InvalidInput
from protocol.agents import ExecutionLayerInput
from protocol.rest import PendingClarification
from protocol.store import ConversationMessageDTO, WriteDecisionResult
from protocol.ws import (
    ExecutionResultPayload,
    SelectionCancelPayload,
    SelectionSubmitPayload,
    SnapshotPayload,
    WriteAppliedPayload,
    WriteDecidePayload,
    WsEnvelope,
    envelope,
)
from serve_app.agents import steps
from serve_app.agents.agent import ConversationAgent
from serve_app.agents.context import Caller, ExecutionError, StoreFacts, summary
from serve_app.agents.log import Outbox, Send
from store import conversation, conversation_events, write_gate
from store.errors import NotFound

SNAPSHOT_LIMIT = 200


async def _selection(
    agent: ConversationAgent, caller: Caller, interaction_id: UUID, arrived: float, send: Send
) -> tuple[str, Deadline, ConversationMessageDTO] | None:
    """A selection frame's key, deadline and the `selection_required` it answers; None when it was answered
    already (its events were sent again). Either frame answers a selection once: the first one wins."""
    key = f"selection:{interaction_id}"
    deadline = agent.deadline("text", arrived)
    if await agent.replayed(caller, key, send, deadline):
        return None
    found = await agent.lookup(deadline, lambda conn: conversation.message(conn, caller.user.id, interaction_id))
    if found is None or found.metadata.message_kind != "selection_required":
        raise ExecutionError(NotFound("No such selection.", field="interaction_id"))
    return key, deadline, found


async def submit(
    agent: ConversationAgent, caller: Caller, payload: SelectionSubmitPayload, arrived: float, send: Send
) -> None:
    """Continue execution with the items chosen; they must be among the ones offered. One answer per selection."""
    opened = await _selection(agent, caller, payload.interaction_id, arrived, send)
    if opened is None:
        return
    key, deadline, asked = opened
    offered = set(asked.metadata.parsed_params.get("candidate_ids", []))
    chosen = [str(i) for i in payload.selected_candidate_ids]
    if not set(chosen) <= offered:
        raise ExecutionError(
            InvalidInput("Choose among the candidates offered.", field="payload.selected_candidate_ids")
        )
    inp = dict(asked.metadata.parsed_params["execution"])
    if len(set(chosen)) != 1:
        raise ExecutionError(InvalidInput("Choose exactly one candidate.", field="payload.selected_candidate_ids"))
    recent = await StoreFacts(agent.db, agent.settings.budgets, deadline).recent(
        caller.user.id, agent.cfg.recent_messages
    )
    execution = ExecutionLayerInput.model_validate(
        {**inp, "recent_messages": [m.model_dump(mode="json") for m in recent]}
    )
    found = steps.restored(asked.metadata.parsed_params)
    workflow = start([execution])
    if found is not None:  # a step of several: the selection resumes the workflow at this step
        workflow = found[0]
        workflow.steps = [execution, *(s.model_copy(update={"recent_messages": recent}) for s in workflow.steps)]
    out = Outbox(caller.user.id, key, send)
    out.messages.append(
        out.message(
            "submit",
            "user",
            "、".join(chosen),
            message_kind="selection_submit",
            target_agent_name=execution.target_agent_name,
            target_function_name=execution.target_function_name,
            parsed_params={"interaction_id": str(asked.id), "selected_candidate_ids": chosen},
        )
    )
    await agent.execute(caller, out, workflow, deadline, selected=payload.selected_candidate_ids)


async def cancel(
    agent: ConversationAgent, caller: Caller, payload: SelectionCancelPayload, arrived: float, send: Send
) -> None:
    opened = await _selection(agent, caller, payload.interaction_id, arrived, send)
    if opened is None:
        return
    key, deadline, asked = opened
    out = Outbox(caller.user.id, key, send)
    names: dict[str, Any] = dict(
        target_agent_name=asked.metadata.target_agent_name, target_function_name=asked.metadata.target_function_name
    )
    out.messages.append(
        out.message(
            "cancel",
            "user",
            "取消",
            message_kind="selection_cancel",
            parsed_params={"interaction_id": str(asked.id)},
            **names,
        )
    )
    reply = "好的，已取消，没有做任何修改。"
    workflow = steps.cancelled(asked.metadata.parsed_params)
    if workflow is not None:
        reply = f"好的，这一步已取消。{summary_reply(workflow)}"
    await out.emit(
        "execution.result",
        ExecutionResultPayload(reply=reply, turn=summary("cancelled", reply, deadline)),
        out.message("cancelled", "assistant", reply, message_kind="execution_result", **names),
    )
    await agent.commit(out, deadline)


async def decide(
    agent: ConversationAgent, caller: Caller, payload: WriteDecidePayload, arrived: float, send: Send
) -> WriteDecisionResult | None:
    """The gate decides and, confirmed, applies — in the transaction that logs the decision and its event — and the
    message's steps after this one run. Returns the gate's result; None for a decision answered already (its events
    were sent again; the gate answers a replay from its record)."""
    key = f"decide:{payload.write_request_id}:{payload.idempotency_key}"
    deadline = agent.deadline("text", arrived)
    if await agent.replayed(caller, key, send, deadline):
        return None
    out = Outbox(caller.user.id, key, send)
    try:
        with deadline.measure("commit"):
            async with agent.db.transaction() as conn:
                asked = await conversation.confirmation(conn, caller.user.id, payload.write_request_id)
                kept = asked.metadata.parsed_params if asked is not None else {}
                result = await write_gate.decide(
                    conn,
                    caller.user.id,
                    payload.write_request_id,
                    decision=payload.decision,
                    idempotency_key=payload.idempotency_key,
                    payload_hash=payload.payload_hash,
                )
                applied = result.status == "applied"
                reply = "已保存。" if applied else "好的，没有保存，什么都没改。"
                if not applied and steps.restored(kept) is not None:
                    reply = "好的，这一步没有保存。"
                message = out.message(
                    "decision",
                    "assistant",
                    reply,
                    message_kind="confirmation_decision",
                    write_request_id=payload.write_request_id,
                    decision=payload.decision,
                )
                if applied:
                    await out.emit(
                        "write.applied",
                        WriteAppliedPayload(
                            write_request_id=result.write_request_id,
                            status="applied",
                            applied_target_id=result.applied_target_id,
                            message=result.message,
                            turn=summary("applied", reply, deadline),
                        ),
                        message,
                        after_commit=True,
                    )
                else:
                    await out.emit(
                        "execution.result",
                        ExecutionResultPayload(
                            reply=reply,
                            result=result.model_dump(mode="json"),
                            write_request_id=result.write_request_id,
                            turn=summary("rejected", reply, deadline),
                        ),
                        message,
                        after_commit=True,
                    )
                await out.commit(conn)
    except Exception as exc:  # noqa: BLE001 — the gate's refusals are execution errors; nothing was written
        raise ExecutionError(exc) from exc
    await out.sent_after_commit()
    if result.status in ("applied", "rejected"):  # the steps said after this one, in the decision's frame
        await steps.resume(
            agent,
            caller,
            parsed_params=kept,
            applied=applied,
            reply=reply,
            key=key,
            first_seq=len(out.events) + 1,
            deadline=deadline,
            send=send,
        )
    return result


async def resume(agent: ConversationAgent, caller: Caller, last_seen_message_id: UUID | None) -> WsEnvelope:
    """The messages after the one the client saw last, the open question, and the last event (transport frames are
    not logged)."""
    async with agent.db.connection() as conn:
        await conversation.expire_questions(conn, caller.user.id)
        messages, found = await conversation.after(conn, caller.user.id, last_seen_message_id, limit=SNAPSHOT_LIMIT)
        question = await conversation.open_question(conn, caller.user.id)
        last = await conversation_events.last(conn, caller.user.id)
    pending = PendingClarification.of(question)
    return envelope(
        "transport.snapshot",
        SnapshotPayload(
            messages=messages,
            pending_clarification=pending,
            found_last_seen=found,
            last_event=WsEnvelope.model_validate(last) if last else None,
        ),
    )
