"""POST /api/v1/auth/password: a signed-in user changes their password. The account's token version is bumped in the
same statement, so every token issued before (a stolen one included) is refused from then on; the answer carries a
new token."""

from __future__ import annotations

from fastapi import APIRouter

from protocol.rest import AuthResponse, PasswordChangeRequest
from serve_app.apidocs.openapi import errors
from serve_app.auth import Unauthorized
from serve_app.http.deps import CurrentUser, StoreDep
from store import users

router = APIRouter(prefix="/api/v1")


@router.post("/auth/password", response_model=AuthResponse, responses=errors(401, 422, 503))
async def change_password(body: PasswordChangeRequest, user: CurrentUser, store: StoreDep) -> AuthResponse:
    """Needs the current password besides the token; answers a new token (the old ones stop working)."""
    if not await store.auth.verify_password(user.password_hash, body.current_password):
        raise Unauthorized("The current password is wrong.", field="current_password")
    password_hash = await store.auth.hash_password(body.new_password)
    async with store.db.connection() as conn:
        changed = await users.change_password(conn, user.id, password_hash)
    if changed is None:
        raise Unauthorized("The account behind this token no longer exists.")
    return AuthResponse(
        user_id=changed.id,
        business_user_id=changed.business_user_id,
        access_token=store.auth.issue(changed.id, version=changed.token_version),
        expires_in=store.auth.token_ttl_s,
    )
