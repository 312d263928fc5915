"""REST endpoints of seed 002 over the store: auth, conversation history, items, long goals, profile, write gate.

Every business endpoint requires a bearer token and reads or writes only the caller's own rows; another
user's ids answer 404 exactly as missing ones do.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from fastapi import APIRouter, Query, Request

from engine.errors import InvalidInput
from protocol.rest import (
    AuthResponse,
    ConversationSnapshot,
    GoalDetailResponse,
    GoalsResponse,
    LoginRequest,
    MeResponse,
    MessagesPage,
    PendingClarification,
    RegisterRequest,
    TimelineResponse,
    WriteDecisionRequest,
    WriteRequestCreate,
    WriteRequestCreated,
)
from protocol.store import UserProfileDTO, WriteDecisionResult
from serve_app.apidocs.openapi import errors
from serve_app.auth import Unauthorized
from serve_app.http.deps import ArrivedDep, CurrentUser, StateDep, StoreDep
from serve_app.http.ratelimit import RateLimited
from serve_app.state import Persistence
from store import business, conversation, users, write_gate
from store.turn_log import utc_now
from store.users import User


def _auth_response(store: Persistence, user: User) -> AuthResponse:
    return AuthResponse(
        user_id=user.id,
        business_user_id=user.business_user_id,
        access_token=store.auth.issue(user.id, version=user.token_version),
        expires_in=store.auth.token_ttl_s,
    )


# every business endpoint: a token is required, and the store may be unreachable
SIGNED_IN = (401, 503)


router = APIRouter(prefix="/api/v1")


@router.post("/auth/register", response_model=AuthResponse, status_code=201, responses=errors(400, 409, 422, 429, 503))
async def register(body: RegisterRequest, store: StoreDep, state: StateDep, request: Request) -> AuthResponse:
    try:
        state.limits.register(state.limits.ip_of(request.scope))
    except RateLimited as refused:
        raise await state.limits.slowly(refused) from None
    users.check_email_allowed(body.email)  # before the hash: a reserved address costs no argon2 work
    async with state.limits.passwords.slot():
        password_hash = await store.auth.hash_password(body.password)
    async with store.db.connection() as conn:
        user = await users.register(conn, email=body.email, password_hash=password_hash, display_name=body.display_name)
    return _auth_response(store, user)


@router.post("/auth/login", response_model=AuthResponse, responses=errors(400, 401, 422, 429, 503))
async def login(body: LoginRequest, store: StoreDep, state: StateDep, request: Request) -> AuthResponse:
    """Limited per client address and per account, with a back-off after failed attempts (docs/security.md)."""
    email, limits = body.email.strip().lower(), state.limits
    try:
        limits.login(limits.ip_of(request.scope), email)
    except RateLimited as refused:
        raise await limits.slowly(refused) from None
    async with store.db.connection() as conn:
        user = await users.by_email(conn, email)
    account = user if user is not None and not user.is_shadow else None
    async with limits.passwords.slot():
        verified = await store.auth.verify_password(account.password_hash if account else None, body.password)
    if not verified or account is None:
        limits.backoff.failed(email)
        raise Unauthorized("Wrong email or password.")
    limits.backoff.succeeded(email)
    return _auth_response(store, account)


@router.get("/auth/me", response_model=MeResponse, responses=errors(*SIGNED_IN))
async def me(user: CurrentUser) -> MeResponse:
    return MeResponse(user_id=user.id, business_user_id=user.business_user_id, display_name=user.display_name)


@router.get("/conversation/messages", response_model=MessagesPage, responses=errors(*SIGNED_IN, 422))
async def messages(
    user: CurrentUser,
    store: StoreDep,
    state: StateDep,
    before_message_id: UUID | None = None,
    limit: Annotated[int, Query(ge=1)] = 20,
) -> MessagesPage:
    async with store.db.connection() as conn:
        page, has_more = await conversation.page(
            conn, user.id, before_message_id=before_message_id, limit=min(limit, state.settings.database.page_limit_max)
        )
    return MessagesPage(messages=page, has_more=has_more)


@router.get("/conversation/snapshot", response_model=ConversationSnapshot, responses=errors(*SIGNED_IN, 422))
async def snapshot(
    user: CurrentUser, store: StoreDep, state: StateDep, last_seen_message_id: UUID | None = None
) -> ConversationSnapshot:
    async with store.db.connection() as conn:
        await conversation.expire_questions(conn, user.id)
        recent, _ = await conversation.page(
            conn, user.id, before_message_id=None, limit=state.settings.database.recent_messages
        )
        question = await conversation.open_question(conn, user.id)
        last = await conversation.last_event(conn, user.id)
    if last_seen_message_id is not None:
        seen = next((m.message_index for m in recent if m.id == last_seen_message_id), None)
        if seen is not None:
            recent = [m for m in recent if m.message_index > seen]
    pending = PendingClarification.of(question)
    return ConversationSnapshot(recent_messages=recent, pending_clarification=pending, last_event=last)


@router.get("/items/timeline", response_model=TimelineResponse, responses=errors(*SIGNED_IN, 422))
async def timeline(
    user: CurrentUser,
    store: StoreDep,
    start_at: datetime,
    end_at: Annotated[datetime, Query(description="After `start_at` (else 422).")],
    item_type: Literal["schedule", "todo", "subtask"] | None = None,
) -> TimelineResponse:
    if start_at.tzinfo is None or end_at.tzinfo is None:
        raise InvalidInput("start_at and end_at need a time zone offset.", field="start_at")
    if end_at <= start_at:
        raise InvalidInput("end_at must be after start_at.", field="end_at")
    async with store.db.connection() as conn:
        items = await business.timeline(conn, user.id, start_at=start_at, end_at=end_at, item_type=item_type)
    return TimelineResponse(items=items)


@router.get("/long-goals", response_model=GoalsResponse, responses=errors(*SIGNED_IN, 422))
async def long_goals(
    user: CurrentUser, store: StoreDep, status: Literal["active", "completed", "cancelled"] | None = None
) -> GoalsResponse:
    async with store.db.connection() as conn:
        return GoalsResponse(goals=await business.goals(conn, user.id, status=status))


@router.get("/long-goals/{goal_id}", response_model=GoalDetailResponse, responses=errors(*SIGNED_IN, 404, 422))
async def long_goal(goal_id: UUID, user: CurrentUser, store: StoreDep) -> GoalDetailResponse:
    async with store.db.connection() as conn:
        goal, subtasks, profile = await business.goal_detail(conn, user.id, goal_id)
    return GoalDetailResponse(goal=goal, subtasks=subtasks, task_profile=profile)


@router.get("/user/profile", response_model=UserProfileDTO, responses=errors(*SIGNED_IN))
async def user_profile(user: CurrentUser, store: StoreDep) -> UserProfileDTO:
    async with store.db.connection() as conn:
        return await business.profile(conn, user.id)


@router.post(
    "/write-requests",
    response_model=WriteRequestCreated,
    status_code=201,
    responses=errors(*SIGNED_IN, 400, 404, 409, 422),
)
async def create_write_request(
    body: WriteRequestCreate, user: CurrentUser, store: StoreDep, state: StateDep
) -> WriteRequestCreated:
    async with store.db.transaction() as conn:
        return await write_gate.create(
            conn,
            user.id,
            body,
            idempotency_key=body.idempotency_key or f"srv-{uuid.uuid4().hex}",
            ttl_s=state.settings.database.write_request_ttl_s,
            now=utc_now(),
        )


@router.post(
    "/write-requests/{write_request_id}/decide",
    response_model=WriteDecisionResult,
    responses=errors(*SIGNED_IN, 400, 404, 409, 422),
)
async def decide(
    write_request_id: UUID,
    body: WriteDecisionRequest,
    user: CurrentUser,
    store: StoreDep,
    state: StateDep,
    arrived: ArrivedDep,
) -> WriteDecisionResult:
    """Confirm or reject a write request. One the conversation proposed is decided as fill-slots' 确认 / 算了 decides
    it: a message of several agent steps goes on with the steps after it (their results are in the conversation)."""
    if state.agent_chat is not None:
        decided = await state.agent_chat.decide(write_request_id, body, user, arrived=arrived)
        if decided is not None:
            return decided
    async with store.db.connection() as conn:
        return await write_gate.decide(
            conn,
            user.id,
            write_request_id,
            decision=body.decision,
            idempotency_key=body.idempotency_key,
            payload_hash=body.payload_hash,
        )
