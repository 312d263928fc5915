"""Users: registered accounts (email + password hash) and the shadow users that own token-less local chats."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass
from uuid import UUID

import asyncpg

from store.errors import EmailReserved, EmailTaken

SHADOW_PREFIX = "local:"
# the domain of shadow users' emails: no account may register an address there
SHADOW_DOMAIN = "shadow.invalid"
# A hash no password verifies against: a shadow user can never log in.
UNUSABLE_PASSWORD = "!"


@dataclass(frozen=True)
class User:
    id: UUID
    business_user_id: str
    email: str
    password_hash: str
    display_name: str | None
    # bumped by every password change: a token issued under an older version is refused (serve_app/auth.py)
    token_version: int = 0

    @property
    def is_shadow(self) -> bool:
        return self.business_user_id.startswith(SHADOW_PREFIX)


def _user(row: asyncpg.Record) -> User:
    return User(
        row["id"],
        row["business_user_id"],
        row["email"],
        row["password_hash"],
        row["display_name"],
        row.get("token_version", 0),  # a shadow user (baton_shadow_user) has no token to version
    )


def _found(row: asyncpg.Record | None) -> User | None:
    return None if row is None else _user(row)


_SHADOW_COLUMNS = "id, business_user_id, email, password_hash, display_name"
_COLUMNS = f"{_SHADOW_COLUMNS}, token_version"


def check_email_allowed(email: str) -> None:
    """EmailReserved for an address of the shadow users' domain (registered first, it would take a shadow user's
    email and leave that user_id unable to start)."""
    domain = email.strip().lower().rpartition("@")[2].rstrip(".")
    if domain == SHADOW_DOMAIN or domain.endswith("." + SHADOW_DOMAIN):
        raise EmailReserved(f"Addresses @{SHADOW_DOMAIN} are reserved; use another email.", field="email")


async def register(conn: asyncpg.Connection, *, email: str, password_hash: str, display_name: str | None) -> User:
    check_email_allowed(email)
    business_id = f"u_{uuid.uuid4().hex[:20]}"
    try:
        row = await conn.fetchrow(
            f"INSERT INTO users (business_user_id, email, password_hash, display_name) VALUES ($1, $2, $3, $4)"
            f" RETURNING {_COLUMNS}",
            business_id,
            email,
            password_hash,
            display_name,
        )
    except asyncpg.UniqueViolationError as exc:
        raise EmailTaken("An account with this email already exists.", field="email") from exc
    return _user(row)


async def by_email(conn: asyncpg.Connection, email: str) -> User | None:
    return _found(
        await conn.fetchrow(
            f"SELECT {_COLUMNS} FROM users WHERE email = $1 AND NOT is_deleted AND status = 'active'", email
        )
    )


async def by_id(conn: asyncpg.Connection, user_id: UUID) -> User | None:
    return _found(
        await conn.fetchrow(
            f"SELECT {_COLUMNS} FROM users WHERE id = $1 AND NOT is_deleted AND status = 'active'", user_id
        )
    )


async def change_password(conn: asyncpg.Connection, user_id: UUID, password_hash: str) -> User | None:
    """Set a new password and bump the token version (every token issued before is refused from now on); None when
    the account is gone."""
    return _found(
        await conn.fetchrow(
            "UPDATE users SET password_hash = $2, token_version = token_version + 1, updated_at = now()"
            f" WHERE id = $1 AND NOT is_deleted AND status = 'active' RETURNING {_COLUMNS}",
            user_id,
            password_hash,
        )
    )


async def find_shadow(conn: asyncpg.Connection, local_user_id: str) -> User | None:
    """The shadow user of a token-less `user_id`, if a turn or an upload ever made one; never creates it."""
    return _found(
        await conn.fetchrow(
            f"SELECT {_COLUMNS} FROM users WHERE business_user_id = $1 AND NOT is_deleted",
            SHADOW_PREFIX + local_user_id,
        )
    )


async def shadow(conn: asyncpg.Connection, local_user_id: str) -> User:
    """The user behind a token-less chat's `user_id` (local mode), created on first use, in one round trip
    (`baton_shadow_user`, migration 0007).

    A new user is committed without waiting for the WAL flush: this runs inside a turn's 150 ms auth budget, and one
    fsync on a busy disk took longer than that here (the turn was shed before anything ran). Nothing is lost by it:
    the turn's own commit waits for the flush, which covers every earlier WAL record, this row included; a crash
    before that loses only a row no stored reply refers to yet, made again on the next call. Inside a caller's
    transaction the caller's commit decides. First uses that race all get the one row."""
    digest = hashlib.sha256(local_user_id.encode("utf-8")).hexdigest()[:32]
    row = await conn.fetchrow(
        f"SELECT {_SHADOW_COLUMNS} FROM baton_shadow_user($1, $2, $3, $4, $5)",
        SHADOW_PREFIX + local_user_id,
        f"{digest}@{SHADOW_DOMAIN}",
        UNUSABLE_PASSWORD,
        local_user_id[:64],
        not conn.is_in_transaction(),
    )
    return _user(row)
