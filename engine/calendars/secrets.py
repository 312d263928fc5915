"""CalDAV app passwords encrypted at rest with Fernet (AES-128-CBC + HMAC-SHA256, from `cryptography`), under the key
in the variable `calendar.key_env` names. The plain password exists only while a sync talks to its server."""

from __future__ import annotations

from cryptography.fernet import Fernet, InvalidToken
from pydantic import SecretStr

from engine.calendars.model import CalendarKeyMissing


class PasswordBox:
    def __init__(self, key: SecretStr | None) -> None:
        self._fernet: Fernet | None = None
        if key is not None:
            try:
                self._fernet = Fernet(key.get_secret_value().encode("ascii"))
            except (ValueError, UnicodeEncodeError):
                raise ValueError(
                    "The calendar key is not a Fernet key (32 url-safe base64-encoded bytes: "
                    "`python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())'`)."
                ) from None

    @property
    def configured(self) -> bool:
        return self._fernet is not None

    def _box(self) -> Fernet:
        if self._fernet is None:
            raise CalendarKeyMissing("No calendar key is configured here, so no CalDAV password can be stored.")
        return self._fernet

    def seal(self, password: str) -> bytes:
        return self._box().encrypt(password.encode("utf-8"))

    def open(self, sealed: bytes) -> str:
        try:
            return self._box().decrypt(sealed).decode("utf-8")
        except InvalidToken:
            raise CalendarKeyMissing(
                "The stored password was sealed under another key; link the calendar again."
            ) from None
