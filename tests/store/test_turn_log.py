"""How turns map to seed 002 message kinds, and the metadata consistency rules (no database needed)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from protocol.http_chat import ChatResponse, Decision, TurnStatus
from protocol.store import ConversationMessageMetadata
from store import turn_log

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _response(status: TurnStatus, **extra) -> ChatResponse:
    return ChatResponse(session_id="s1", reply="好的", status=status, **extra)


@pytest.mark.parametrize(
    "status, kind",
    [
        (TurnStatus.completed, "execution_result"),
        (TurnStatus.decided, "decision"),
        (TurnStatus.rejected, "decision"),
        (TurnStatus.social, "system_notice"),
        (TurnStatus.fallback, "system_notice"),
    ],
)
def test_reply_kinds(status, kind):
    message = turn_log.reply_message(_response(status, intent="cabin_window_open"), now=NOW, question_ttl_s=60)
    assert message.role == "assistant" and message.metadata.message_kind == kind and message.metadata.session_id == "s1"


@pytest.mark.parametrize(
    "status, question_type",
    [
        (TurnStatus.waiting_slot, "normal"),
        (TurnStatus.waiting_confirmation, "confirmation"),
        (TurnStatus.clarify, "disambiguation"),
    ],
)
def test_questions_open_with_their_own_id_and_an_expiry(status, question_type):
    message = turn_log.reply_message(_response(status, pending_slots=["temperature"]), now=NOW, question_ttl_s=600)
    meta = message.metadata
    assert meta.message_kind == "clarification_question" and meta.question_id == message.id
    assert meta.question_status == "open" and meta.question_type == question_type
    assert meta.expires_at == datetime(2026, 11, 30, 12, 10, tzinfo=UTC) and meta.missing_fields == ["temperature"]


def test_decision_carries_agent_function_and_params():
    decision = Decision(
        intents=["schedule_create"], agent="schedule_todo_agent", function="create", params={"title": "开会"}
    )
    meta = turn_log.reply_message(_response(TurnStatus.decided, decision=decision), now=NOW, question_ttl_s=60).metadata
    assert (meta.target_agent_name, meta.target_function_name, meta.parsed_params) == (
        "schedule_todo_agent",
        "create",
        {"title": "开会"},
    )


def test_user_message_is_an_answer_only_when_a_question_is_open():
    first = turn_log.user_message("调一下空调", session_id="s1", client_message_id="c1", question=None)
    assert first.metadata.message_kind == "input" and first.metadata.client_message_id == "c1"
    question = turn_log.reply_message(_response(TurnStatus.waiting_slot), now=NOW, question_ttl_s=60)

    class Stored:  # the stored question as the log returns it
        id = question.id

    answer = turn_log.user_message("24度", session_id="s1", client_message_id="c2", question=Stored())
    assert (
        answer.metadata.message_kind == "clarification_answer" and answer.metadata.reply_to_question_id == question.id
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"message_kind": "input"},  # a user input without client_message_id
        {"message_kind": "clarification_question", "question_status": "open"},  # no expiry
        {"message_kind": "clarification_answer", "client_message_id": "c"},  # answers nothing
        {"message_kind": "execution_result", "question_status": "open"},
        {"message_kind": "input", "client_message_id": "c", "decision": "confirmed"},
        {"message_kind": "input", "client_message_id": "c", "reply_to_question_id": str(uuid.uuid4())},
        {"message_kind": "made_up"},
    ],
)
def test_inconsistent_metadata_is_refused(fields):
    with pytest.raises(ValidationError):
        ConversationMessageMetadata(**fields)


def test_server_client_message_ids_are_unique():
    assert turn_log.new_client_message_id() != turn_log.new_client_message_id()
