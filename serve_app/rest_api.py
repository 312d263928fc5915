"""REST endpoints of seed 002 over the store: auth, conversation history, items, long goals, profile, write gate.

Every business endpoint requires a bearer token and reads or writes only the caller's own rows; another
user's ids answer 404 exactly as missing ones do.
"""
from __future__ import annotations

import uuid
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Annotated, Literal
from uuid import UUID

from fastapi import APIRouter, Depends, Query, Request

from engine.errors import InvalidInput, SessionForbidden
from engine.settings import Settings
from protocol.rest import (AuthResponse, ConversationSnapshot, GoalDetailResponse, GoalsResponse, LoginRequest,
                           MeResponse, MessagesPage, PendingClarification, RegisterRequest, TimelineResponse,
                           WriteDecisionRequest, WriteRequestCreate, WriteRequestCreated)
from protocol.store import UserProfileDTO, WriteDecisionResult
from serve_app.auth import Auth, Unauthorized, bearer_token
from serve_app.openapi_docs import Authorization, errors
from serve_app.stored_chat import StoredChat
from store import business, conversation, users, write_gate
from store.database import Database
from store.errors import StoreUnavailable
from store.turn_log import utc_now
from store.users import User


SHADOW_CACHE_SIZE = 4096


@dataclass
class Persistence:
    """What the store-backed routes need, built once per orchestrator replica. Shadow users never change once
    created, so each replica remembers the ones it met and a token-less turn skips that query."""

    db: Database
    auth: Auth
    chat: StoredChat
    settings: Settings
    shadows: OrderedDict[str, User] = field(default_factory=OrderedDict)

    async def shadow_user(self, local_user_id: str) -> User:
        user = self.shadows.get(local_user_id)
        if user is None:
            async with self.db.connection() as conn:
                user = await users.shadow(conn, local_user_id)
            self.shadows[local_user_id] = user
            if len(self.shadows) > SHADOW_CACHE_SIZE:
                self.shadows.popitem(last=False)
        else:
            self.shadows.move_to_end(local_user_id)
        return user


async def _persistence(request: Request) -> Persistence:
    serving = getattr(request.app.state, "serving", None)
    persistence = getattr(serving, "persistence", None)
    if persistence is None:
        raise StoreUnavailable("This deployment runs without a database.")
    return persistence


PersistenceDep = Annotated[Persistence, Depends(_persistence)]


async def _current_user(p: PersistenceDep, authorization: Authorization) -> User:
    token = bearer_token(authorization)
    if token is None:
        raise Unauthorized("This endpoint needs 'Authorization: Bearer <access_token>'.")
    user_id = p.auth.verify(token)
    async with p.db.connection() as conn:
        user = await users.by_id(conn, user_id)
    if user is None:
        raise Unauthorized("The account behind this token no longer exists.")
    return user


CurrentUser = Annotated[User, Depends(_current_user)]


async def chat_user(p: Persistence, authorization: str | None, claimed_user_id: str | None) -> tuple[User, str]:
    """Who a turn or a media object belongs to: the token's user or, with no token in the local mode, the shadow
    user of the claimed `user_id` (with `auth.require_token` a missing token is 401). Returns the user and the key
    the engine and the media store own things by: always the account's UUID, never the claimed string, so a
    claimed `user_id` that happens to be someone's UUID names a shadow account of its own, not theirs."""
    token = bearer_token(authorization)
    if token is None:
        if p.settings.auth.require_token:
            raise Unauthorized("This deployment needs 'Authorization: Bearer <access_token>' (auth.require_token).")
        if not claimed_user_id:
            raise InvalidInput("Give user_id, or an access token.", field="user_id")
        user = await p.shadow_user(claimed_user_id)
        return user, str(user.id)
    user = await _current_user(p, authorization)
    if claimed_user_id and claimed_user_id not in (str(user.id), user.business_user_id):
        raise SessionForbidden("user_id does not match the access token.", field="user_id")
    return user, str(user.id)


def _auth_response(p: Persistence, user: User) -> AuthResponse:
    return AuthResponse(user_id=user.id, business_user_id=user.business_user_id, access_token=p.auth.issue(user.id),
                        expires_in=p.auth.token_ttl_s)


# every business endpoint: a token is required, and the store may be unreachable
SIGNED_IN = (401, 503)


def store_router() -> APIRouter:
    router = APIRouter(prefix="/api/v1")

    @router.post("/auth/register", response_model=AuthResponse, status_code=201, responses=errors(400, 409, 422, 503))
    async def register(body: RegisterRequest, p: PersistenceDep) -> AuthResponse:
        password_hash = await p.auth.hash_password(body.password)
        async with p.db.connection() as conn:
            user = await users.register(conn, email=body.email, password_hash=password_hash, display_name=body.display_name)
        return _auth_response(p, user)

    @router.post("/auth/login", response_model=AuthResponse, responses=errors(400, 401, 422, 503))
    async def login(body: LoginRequest, p: PersistenceDep) -> AuthResponse:
        async with p.db.connection() as conn:
            user = await users.by_email(conn, body.email.strip().lower())
        usable = user is not None and not user.is_shadow
        if not await p.auth.verify_password(user.password_hash if usable else None, body.password) or not usable:
            raise Unauthorized("Wrong email or password.")
        return _auth_response(p, user)

    @router.get("/auth/me", response_model=MeResponse, responses=errors(*SIGNED_IN))
    async def me(user: CurrentUser) -> MeResponse:
        return MeResponse(user_id=user.id, business_user_id=user.business_user_id, display_name=user.display_name)

    @router.get("/conversation/messages", response_model=MessagesPage, responses=errors(*SIGNED_IN, 422))
    async def messages(user: CurrentUser, p: PersistenceDep, before_message_id: UUID | None = None,
                       limit: Annotated[int, Query(ge=1)] = 20) -> MessagesPage:
        async with p.db.connection() as conn:
            page, has_more = await conversation.page(conn, user.id, before_message_id=before_message_id,
                                                     limit=min(limit, p.settings.store.page_limit_max))
        return MessagesPage(messages=page, has_more=has_more)

    @router.get("/conversation/snapshot", response_model=ConversationSnapshot, responses=errors(*SIGNED_IN, 422))
    async def snapshot(user: CurrentUser, p: PersistenceDep, last_seen_message_id: UUID | None = None) -> ConversationSnapshot:
        async with p.db.connection() as conn:
            await conversation.expire_questions(conn, user.id)
            recent, _ = await conversation.page(conn, user.id, before_message_id=None, limit=p.settings.store.recent_messages)
            question = await conversation.open_question(conn, user.id)
            last = await conversation.last_event(conn, user.id)
        if last_seen_message_id is not None:
            seen = next((m.message_index for m in recent if m.id == last_seen_message_id), None)
            if seen is not None:
                recent = [m for m in recent if m.message_index > seen]
        pending = None
        if question is not None:
            meta = question.metadata
            pending = PendingClarification(question_id=question.id, question_text=question.raw_content,
                                           missing_fields=meta.missing_fields, expires_at=meta.expires_at,
                                           session_id=meta.session_id)
        return ConversationSnapshot(recent_messages=recent, pending_clarification=pending, last_event=last)

    @router.get("/items/timeline", response_model=TimelineResponse, responses=errors(*SIGNED_IN, 422))
    async def timeline(user: CurrentUser, p: PersistenceDep, start_at: datetime,
                       end_at: Annotated[datetime, Query(description="After `start_at` (else 422).")],
                       item_type: Literal["schedule", "todo", "subtask"] | None = None) -> TimelineResponse:
        if start_at.tzinfo is None or end_at.tzinfo is None:
            raise InvalidInput("start_at and end_at need a time zone offset.", field="start_at")
        if end_at <= start_at:
            raise InvalidInput("end_at must be after start_at.", field="end_at")
        async with p.db.connection() as conn:
            items = await business.timeline(conn, user.id, start_at=start_at, end_at=end_at, item_type=item_type)
        return TimelineResponse(items=items)

    @router.get("/long-goals", response_model=GoalsResponse, responses=errors(*SIGNED_IN, 422))
    async def long_goals(user: CurrentUser, p: PersistenceDep,
                         status: Literal["active", "completed", "cancelled"] | None = None) -> GoalsResponse:
        async with p.db.connection() as conn:
            return GoalsResponse(goals=await business.goals(conn, user.id, status=status))

    @router.get("/long-goals/{goal_id}", response_model=GoalDetailResponse, responses=errors(*SIGNED_IN, 404, 422))
    async def long_goal(goal_id: UUID, user: CurrentUser, p: PersistenceDep) -> GoalDetailResponse:
        async with p.db.connection() as conn:
            goal, subtasks, profile = await business.goal_detail(conn, user.id, goal_id)
        return GoalDetailResponse(goal=goal, subtasks=subtasks, task_profile=profile)

    @router.get("/user/profile", response_model=UserProfileDTO, responses=errors(*SIGNED_IN))
    async def user_profile(user: CurrentUser, p: PersistenceDep) -> UserProfileDTO:
        async with p.db.connection() as conn:
            return await business.profile(conn, user.id)

    @router.post("/write-requests", response_model=WriteRequestCreated, status_code=201,
                 responses=errors(*SIGNED_IN, 400, 404, 409, 422))
    async def create_write_request(body: WriteRequestCreate, user: CurrentUser, p: PersistenceDep) -> WriteRequestCreated:
        async with p.db.transaction() as conn:
            return await write_gate.create(conn, user.id, body, idempotency_key=body.idempotency_key or f"srv-{uuid.uuid4().hex}",
                                           ttl_s=p.settings.store.write_request_ttl_s, now=utc_now())

    @router.post("/write-requests/{write_request_id}/decide", response_model=WriteDecisionResult,
                 responses=errors(*SIGNED_IN, 400, 404, 409, 422))
    async def decide(write_request_id: UUID, body: WriteDecisionRequest, user: CurrentUser, p: PersistenceDep) -> WriteDecisionResult:
        async with p.db.connection() as conn:
            return await write_gate.decide(conn, user.id, write_request_id, decision=body.decision,
                                           idempotency_key=body.idempotency_key, payload_hash=body.payload_hash)

    return router
