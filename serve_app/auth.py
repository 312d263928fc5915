"""Who is asking: argon2 password hashes, signed expiring bearer tokens (JWT, HMAC only, with Baton's issuer and
audience and the account's token version), and the caller of a turn, an upload or a REST request (`Callers`): the
token's user or, in the token-less local mode, a shadow user."""

from __future__ import annotations

import asyncio
import os
import secrets
import stat
import time
from collections import OrderedDict
from pathlib import Path
from uuid import UUID

import jwt
from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError

from config.serving import AuthConfig
from engine.errors import BatonError, InvalidInput, SessionForbidden
from protocol.user_id import valid_user_id
from store import users
from store.database import Database
from store.errors import NotFound
from store.users import User

SECRET_FILE = "auth_secret"
SHADOW_CACHE_SIZE = 4096


class Unauthorized(BatonError):
    """Missing, malformed, expired or forged credentials."""

    code = "unauthorized"


def signing_secret(config: AuthConfig, state_dir: Path, given: str | None) -> str:
    """`given` (the configured env var's value, `Settings.env.auth_secret`), else (`generate_secret`) one generated
    once under the state dir and shared by the replicas of this machine. Shorter than `min_secret_chars` refuses to
    start."""
    if given:
        return _long_enough(given, config, f"{config.secret_env}")
    if not config.generate_secret:
        raise RuntimeError(
            f"{config.secret_env} is not set and auth.generate_secret is false: give every replica the same "
            f"signing secret of at least {config.min_secret_chars} characters (e.g. from a Kubernetes Secret)."
        )
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
    _private_to_us(path, config)
    secret = path.read_text(encoding="ascii").strip()
    if not secret:
        raise RuntimeError(f"{path} is empty: delete it (a new secret is generated) or set {config.secret_env}.")
    return _long_enough(secret, config, str(path))


def _private_to_us(path: Path, config: AuthConfig) -> None:
    """Refuses a secret file another account owns or that its group or others may read or write: whoever can read it
    can sign tokens for every user, and whoever can write it can choose the key."""
    info = path.stat()
    if info.st_uid != os.geteuid():
        raise RuntimeError(
            f"{path} belongs to uid {info.st_uid}, not to this process (uid {os.geteuid()}): a signing secret someone"
            f" else controls is not trusted. Remove it (a new one is generated) or set {config.secret_env}."
        )
    if info.st_mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise RuntimeError(
            f"{path} has mode {stat.S_IMODE(info.st_mode):04o}: other accounts may read the signing secret. Run"
            f" `chmod 600 {path}` (or remove it: a new one is generated), or set {config.secret_env}."
        )


def _long_enough(secret: str, config: AuthConfig, source: str) -> str:
    if len(secret) < config.min_secret_chars:
        raise RuntimeError(
            f"The signing secret in {source} has {len(secret)} characters; it needs at least "
            f"{config.min_secret_chars} (auth.min_secret_chars), e.g. `openssl rand -base64 48`."
        )
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

    def issue(self, user_id: UUID, *, version: int = 0, now: float | None = None) -> str:
        """A token for `user_id` under the account's token `version` (`User.token_version`)."""
        now = time.time() if now is None else now
        claims = {
            "sub": str(user_id),
            "iss": self._config.issuer,
            "aud": self._config.audience,
            "iat": int(now),
            "exp": int(now) + self._config.token_ttl_s,
            "ver": version,
        }
        return jwt.encode(claims, self._secret, algorithm=self._config.algorithm)

    def verify(self, token: str) -> UUID:
        """The user id a token was issued to; Unauthorized if it is forged, expired or malformed."""
        return self.claims(token)[0]

    def claims(self, token: str) -> tuple[UUID, int]:
        """The user id and token version of a token signed with the configured algorithm alone, for this issuer and
        audience; Unauthorized if it is forged, expired, malformed or meant for someone else."""
        try:
            claims = jwt.decode(
                token,
                self._secret,
                algorithms=[self._config.algorithm],
                issuer=self._config.issuer,
                audience=self._config.audience,
                options={"require": ["sub", "exp", "iss", "aud", "ver"]},
            )
            version = claims["ver"]
            if not isinstance(version, int) or isinstance(version, bool):
                raise ValueError("ver is not an integer")
            return UUID(claims["sub"]), version
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


class Callers:
    """Who a request comes from, built once per replica. Shadow users never change once created, so each replica
    remembers the ones it met and a token-less turn skips that query."""

    def __init__(self, *, auth: Auth, db: Database, require_token: bool) -> None:
        self.auth = auth
        self._db = db
        self._require_token = require_token
        self._shadows: OrderedDict[str, User] = OrderedDict()

    async def shadow_user(self, local_user_id: str) -> User:
        user = await self.known_shadow(local_user_id, create=True)
        assert user is not None
        return user

    async def known_shadow(self, local_user_id: str, *, create: bool = False) -> User | None:
        """The shadow user of `local_user_id`; `create`: made on first use (a turn or an upload), else None where
        none was ever made (a read writes no row)."""
        user = self._shadows.get(local_user_id)
        if user is None:
            async with self._db.connection() as conn:
                user = await (users.shadow(conn, local_user_id) if create else users.find_shadow(conn, local_user_id))
            if user is None:
                return None
            self._shadows[local_user_id] = user
            if len(self._shadows) > SHADOW_CACHE_SIZE:
                self._shadows.popitem(last=False)
        else:
            self._shadows.move_to_end(local_user_id)
        return user

    async def signed_in(self, authorization: str | None) -> User:
        """The token's user; Unauthorized without a valid token or when its account is gone."""
        token = bearer_token(authorization)
        if token is None:
            raise Unauthorized("This endpoint needs 'Authorization: Bearer <access_token>'.")
        user_id, version = self.auth.claims(token)
        async with self._db.connection() as conn:
            user = await users.by_id(conn, user_id)
        if user is None:
            raise Unauthorized("The account behind this token no longer exists.")
        if version != user.token_version:
            raise Unauthorized("The access token was revoked (the password changed); log in again.")
        return user

    async def of_turn(
        self, authorization: str | None, claimed_user_id: str | None, *, create: bool = True
    ) -> tuple[User, str]:
        """Who a turn or a media object belongs to: the token's user or, with no token in the local mode, the shadow
        user of the claimed `user_id` (with `auth.require_token` a missing token is 401). Returns the user and the key
        the engine and the media store own things by: always the account's UUID, never the claimed string, so a
        claimed `user_id` that happens to be someone's UUID names a shadow account of its own, not theirs. A claimed
        `user_id` must pass protocol.user_id; with `create=False` (a read) no shadow account is made: NotFound."""
        if bearer_token(authorization) is None:
            if self._require_token:
                raise Unauthorized("This deployment needs 'Authorization: Bearer <access_token>' (auth.require_token).")
            if not claimed_user_id:
                raise InvalidInput("Give user_id, or an access token.", field="user_id")
            user = await self.known_shadow(_checked(claimed_user_id), create=create)
            if user is None:
                raise NotFound("Nothing is stored for this user_id.", field="user_id")
            return user, str(user.id)
        user = await self.signed_in(authorization)
        if claimed_user_id and claimed_user_id not in (str(user.id), user.business_user_id):
            raise SessionForbidden("user_id does not match the access token.", field="user_id")
        return user, str(user.id)

    async def check_api_key(self, authorization: str | None) -> None:
        """The OpenAI-compatible routes: with `auth.require_token` the api_key must be a valid, unrevoked access token;
        in the local mode it is not a Baton account and is not read."""
        if not self._require_token:
            return
        if bearer_token(authorization) is None:
            raise Unauthorized("This deployment needs 'Authorization: Bearer <access_token>' (auth.require_token).")
        await self.signed_in(authorization)


def _checked(user_id: str) -> str:
    try:
        return valid_user_id(user_id)
    except ValueError as exc:
        raise InvalidInput(f"{exc}.", field="user_id") from exc
