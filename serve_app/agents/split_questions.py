"""A long-task split's questions: asked together in one clarification, and the answers read back into the split
agent's parameters — asked again while one does not read, else the split runs through execution."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any
from uuid import UUID

from engine.conversation.perception import Clarify, default_range
from engine.deadline import Deadline
from protocol.agents import ExecutionLayerInput
from protocol.http_chat import ChatResponse
from protocol.store import ConversationMessageDTO
from protocol.ws import ClarificationPayload, DecisionPayload, DialogueAnswerPayload
from serve_app.agents.agent import ConversationAgent
from serve_app.agents.context import Caller, StoreFacts, summary
from serve_app.agents.log import Outbox, Send, frame_id


async def ask_split(
    agent: ConversationAgent,
    out: Outbox,
    perceived: Clarify,
    raw_input: str,
    source_id: UUID,
    deadline: Deadline,
    response: ChatResponse | None = None,
    *,
    replaces: UUID | None = None,
) -> None:
    """Ask a split's questions in one clarification. `replaces`: the turn's reply, which the engine logged as
    its decision; perception is not done, so that message becomes the question."""
    name = "split-question"
    question_id = replaces or frame_id(out.user_id, out.replay_key, name)
    clarify = agent.perception.split_questions(
        [q.field_name for q in perceived.request.questions],
        perceived.known,
        question_id,
        reason=perceived.request.reason,
    )
    request = clarify.request
    expires_at = out.question_expiry(agent.settings.database.clarification_ttl_s)
    text = "为了帮你拆分这个目标，请告诉我：" + "；".join(q.question_text for q in request.questions)
    message = out.message(
        name,
        "assistant",
        text,
        message_id=question_id,
        message_kind="clarification_question",
        question_id=question_id,
        question_status="open",
        question_type="long_task_split",
        expires_at=expires_at,
        target_agent_name=request.original_agent_name,
        target_function_name=request.original_function_name,
        missing_fields=[q.field_name for q in request.questions],
        parsed_params={**_jsonable(perceived.known), "raw_input": raw_input, "source_message_id": str(source_id)},
    )
    await out.emit(
        "dialogue.clarification",
        ClarificationPayload(
            question_id=question_id,
            question_type="long_task_split",
            reason=request.reason,
            mode="batch",
            questions=request.questions,
            expires_at=expires_at,
            original_agent_name=request.original_agent_name,
            original_function_name=request.original_function_name,
            turn=summary("waiting_slot", text, deadline, response),
        ),
        message,
        after_commit=True,
    )
    # held until the frame's commit: that commit logs the question (or rewrites the turn's reply into it), and a
    # client answering the moment it hears the question must find it
    if replaces is not None:
        out.rewrites.append(out.messages.pop())


async def split_answer(
    agent: ConversationAgent,
    caller: Caller,
    question: ConversationMessageDTO,
    payload: DialogueAnswerPayload,
    raw: str,
    key: str,
    deadline: Deadline,
    send: Send,
) -> None:
    meta = question.metadata
    known = dict(meta.parsed_params)
    raw_input, source_id = known.pop("raw_input", ""), uuid.UUID(known.pop("source_message_id"))
    read, missing = agent.perception.read_answers(
        meta.missing_fields, payload.answers, payload.raw_content, agent.now()
    )
    out = Outbox(caller.user.id, key, send)
    out.closes.append(question.id)
    out.messages.append(
        out.message(
            "answer",
            "user",
            raw,
            message_kind="clarification_answer",
            client_message_id=payload.client_message_id,
            reply_to_question_id=question.id,
            target_agent_name="long_task_split_agent",
            target_function_name="split",
            parsed_params=_jsonable(read),
        )
    )
    known.update(read)
    if missing:
        clarify = agent.perception.split_questions(missing, known, question.id, reason="invalid_answer")
        await ask_split(agent, out, clarify, raw_input, source_id, deadline)
        await agent.commit(out, deadline)
        return
    store = StoreFacts(agent.db, agent.settings.budgets, deadline)
    recent = await store.recent(caller.user.id, agent.cfg.recent_messages)
    time_range = default_range(agent.cfg, "long_task_split_agent", "split", agent.now())
    params = _jsonable(known)
    reply = "收到，我来把这个目标拆成可执行的小任务。"
    decision = out.message(
        "decision",
        "assistant",
        reply,
        message_kind="decision",
        target_agent_name="long_task_split_agent",
        target_function_name="split",
        parsed_params=params,
    )
    await out.emit(
        "dialogue.decision",
        DecisionPayload(
            source_message_id=source_id,
            target_agent_name="long_task_split_agent",
            target_function_name="split",
            parsed_params=params,
            time_range=time_range.model_dump(mode="json"),
            reply=reply,
        ),
        decision,
    )
    await agent.execute(
        caller,
        out,
        ExecutionLayerInput(
            target_agent_name="long_task_split_agent",
            target_function_name="split",
            parsed_params=params,
            time_range=time_range,
            raw_input=raw_input,
            source_message_id=source_id,
            recent_messages=recent,
        ),
        deadline,
    )


def _jsonable(values: dict[str, Any]) -> dict[str, Any]:
    return {k: v.isoformat() if isinstance(v, datetime) else v for k, v in values.items()}
