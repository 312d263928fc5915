"""How a chat turn is written to the conversation log: the user's message and the reply, as seed 002 message kinds."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from protocol.http_chat import ChatResponse, TurnStatus
from protocol.media import InputModality
from protocol.store import ConversationMessageDTO, ConversationMessageMetadata, StoredTimeRange
from store.conversation import NewMessage
from store.ids import new_id

QUESTION_TYPE = {
    TurnStatus.waiting_slot: "normal",
    TurnStatus.waiting_confirmation: "confirmation",
    TurnStatus.clarify: "disambiguation",
}
RESULT_KIND = {
    TurnStatus.completed: "execution_result",
    TurnStatus.decided: "decision",
    TurnStatus.rejected: "decision",
}


def new_client_message_id() -> str:
    """Seed 002 requires a client_message_id on every user message; a client that sends none gets a server one."""
    return f"srv-{uuid.uuid4().hex}"


def user_message(
    text: str,
    *,
    session_id: str,
    client_message_id: str,
    question: ConversationMessageDTO | None,
    modality: InputModality = "text",
    source_url: str | None = None,
    message_id: uuid.UUID | None = None,
) -> NewMessage:
    """`input`, or `clarification_answer` when the session has an open question this message answers."""
    if question is not None:
        metadata = ConversationMessageMetadata(
            message_kind="clarification_answer",
            session_id=session_id,
            client_message_id=client_message_id,
            reply_to_question_id=question.id,
        )
    else:
        metadata = ConversationMessageMetadata(
            message_kind="input", session_id=session_id, client_message_id=client_message_id
        )
    return NewMessage(
        role="user",
        modality=modality,
        source_url=source_url,
        raw_content=text,
        metadata=metadata,
        id=message_id or new_id(),
    )


def reply_message(
    response: ChatResponse, *, now: datetime, question_ttl_s: int, message_id: uuid.UUID | None = None
) -> NewMessage:
    """The assistant's message for a turn's response; a question it asks opens a clarification_question."""
    message_id = message_id or new_id()
    common = dict(
        session_id=response.session_id, target_function_name=response.intent, parsed_params=dict(response.slots)
    )
    if response.status in QUESTION_TYPE:
        metadata = ConversationMessageMetadata(
            message_kind="clarification_question",
            question_id=message_id,
            question_status="open",
            question_type=QUESTION_TYPE[response.status],
            expires_at=now + timedelta(seconds=question_ttl_s),
            missing_fields=list(response.pending_slots),
            **common,
        )
    elif response.status in RESULT_KIND:
        decision = response.decision
        time_range = None
        if decision is not None and decision.time_range is not None:
            time_range = StoredTimeRange(
                start_at=decision.time_range.start, end_at=decision.time_range.end, source="user_explicit"
            )
        if decision is not None:
            common.update(
                target_function_name=decision.function or response.intent, parsed_params=dict(decision.params)
            )
        metadata = ConversationMessageMetadata(
            message_kind=RESULT_KIND[response.status],
            target_agent_name=decision.agent if decision else None,
            time_range=time_range,
            **common,
        )
    else:
        metadata = ConversationMessageMetadata(message_kind="system_notice", **common)
    return NewMessage(role="assistant", raw_content=response.reply, metadata=metadata, id=message_id)


def utc_now() -> datetime:
    return datetime.now(UTC)
