"""Typed store errors; the HTTP boundary maps each to its status code and the error envelope."""

from __future__ import annotations

from engine.errors import BatonError


class StoreUnavailable(BatonError):
    """The database cannot be reached; nothing was written. The client should retry after a pause."""

    code = "store_unavailable"


class NotFound(BatonError):
    """No such row for this user (another user's ids look exactly like missing ones)."""

    code = "not_found"


class Conflict(BatonError):
    """The request is well-formed but contradicts the stored state; `code` says which rule."""

    code = "conflict"


class SessionBusy(Conflict):
    """Another turn of the same session is running; retry after a pause."""

    code = "session_busy"


class SessionOfOtherAssistant(Conflict):
    """The session is a conversation with another pack served from the same database (one cluster, two assistants):
    it is not resumed here, and nothing of this turn ran."""

    code = "session_other_assistant"


class EmailTaken(Conflict):
    code = "email_taken"


class EmailReserved(Conflict):
    """An address of the domain reserved for shadow users (store.users.SHADOW_DOMAIN)."""

    code = "email_reserved"


class TurnExists(Conflict):
    """A turn with this client_message_id was saved first (on another session); nothing of this one was."""

    code = "duplicate_message"


class IdempotencyMismatch(Conflict):
    """An idempotency key reused for a different request (another target, action or payload)."""

    code = "idempotency_mismatch"


class AlreadyDecided(Conflict):
    code = "already_decided"


class RequestExpired(Conflict):
    code = "expired"


class PayloadChanged(Conflict):
    code = "payload_changed"


class StaleVersion(Conflict):
    code = "stale_version"


class UnsupportedWrite(BatonError):
    """A write the gate has no applier for (action × target type)."""

    code = "unsupported_write"


class MigrationError(Exception):
    """An applied migration file was edited afterwards; refuse to start rather than guess."""
