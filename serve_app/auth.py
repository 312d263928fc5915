"""Accounts: argon2 password hashes and signed, expiring bearer tokens (JWT, HS256 by default)."""
from __future__ import annotations

import asyncio
import os
import secrets
import time
from collections.abc import Mapping
from pathlib import Path
from uuid import UUID

import jwt
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from engine.errors import BatonError
from engine.settings import AuthConfig

SECRET_FILE = "auth_secret"


class Unauthorized(BatonError):
    """Missing, malformed, expired or forged credentials."""

    code = "unauthorized"


def signing_secret(config: AuthConfig, state_dir: Path, env: Mapping[str, str]) -> str:
    """The secret from the configured env var, else (`generate_secret`) one generated once under the state dir and
    shared by the replicas of this machine. Shorter than `min_secret_chars` refuses to start."""
    if env.get(config.secret_env):
        return _long_enough(env[config.secret_env], config, f"{config.secret_env}")
    if not config.generate_secret:
        raise RuntimeError(f"{config.secret_env} is not set and auth.generate_secret is false: give every replica the same "
                           f"signing secret of at least {config.min_secret_chars} characters (e.g. from a Kubernetes Secret).")
    path = state_dir / SECRET_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    if not path.exists():
        # written whole under a private name, then linked into place: replicas starting together on a fresh state
        # dir either create the file or find it complete — never read it half-written (an empty key)
        draft = path.with_name(f".{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as f:
            f.write(secrets.token_urlsafe(48))
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another replica linked its secret first; everyone uses that one
        finally:
            draft.unlink()
    secret = path.read_text(encoding="ascii").strip()
    if not secret:
        raise RuntimeError(f"{path} is empty: delete it (a new secret is generated) or set {config.secret_env}.")
    return _long_enough(secret, config, str(path))


def _long_enough(secret: str, config: AuthConfig, source: str) -> str:
    if len(secret) < config.min_secret_chars:
        raise RuntimeError(f"The signing secret in {source} has {len(secret)} characters; it needs at least "
                           f"{config.min_secret_chars} (auth.min_secret_chars), e.g. `openssl rand -base64 48`.")
    return secret


class Auth:
    """argon2 work (tens of ms of CPU) runs on a thread, never on the ingress event loop."""

    def __init__(self, config: AuthConfig, secret: str) -> None:
        self._config = config
        self._secret = secret
        self._hasher = PasswordHasher()
        # checked when the email is unknown, so a wrong email costs what a wrong password costs
        self._dummy_hash = self._hasher.hash(secrets.token_urlsafe(16))

    @property
    def token_ttl_s(self) -> int:
        return self._config.token_ttl_s

    async def hash_password(self, password: str) -> str:
        return await asyncio.to_thread(self._hasher.hash, password)

    async def verify_password(self, password_hash: str | None, password: str) -> bool:
        """False for a wrong password, and for no account at all (`password_hash` None) after the same work."""
        return await asyncio.to_thread(self._verify, password_hash, password)

    def _verify(self, password_hash: str | None, password: str) -> bool:
        try:
            ok = self._hasher.verify(password_hash or self._dummy_hash, password)
        except (VerificationError, InvalidHashError):
            return False
        return ok and password_hash is not None

    def issue(self, user_id: UUID, *, now: float | None = None) -> str:
        now = time.time() if now is None else now
        claims = {"sub": str(user_id), "iat": int(now), "exp": int(now) + self._config.token_ttl_s}
        return jwt.encode(claims, self._secret, algorithm=self._config.algorithm)

    def verify(self, token: str) -> UUID:
        """The user id a token was issued to; Unauthorized if it is forged, expired or malformed."""
        try:
            claims = jwt.decode(token, self._secret, algorithms=[self._config.algorithm], options={"require": ["sub", "exp"]})
            return UUID(claims["sub"])
        except jwt.ExpiredSignatureError as exc:
            raise Unauthorized("The access token has expired; log in again.") from exc
        except (jwt.InvalidTokenError, ValueError) as exc:
            raise Unauthorized("The access token is not valid.") from exc


def bearer_token(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header; None when absent; Unauthorized when malformed."""
    if authorization is None:
        return None
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("Use 'Authorization: Bearer <access_token>'.")
    return token.strip()
