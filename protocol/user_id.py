"""The one rule for a claimed `user_id` (the token-less local mode's name of a user), shared by HTTP and the
WebSocket: 1 to 128 characters, letters (any script), digits and `.` `_` `-` `:` `@` `+` only — so no NUL, no
control character, no space and no path separator reaches the database, a log line or a media key."""

from __future__ import annotations

import re

from engine.errors import InvalidInput

USER_ID_MAX_CHARS = 128
USER_ID_PATTERN = rf"^[\w.:@+\-]{{1,{USER_ID_MAX_CHARS}}}$"
_USER_ID = re.compile(USER_ID_PATTERN)


def valid_user_id(value: str, *, field: str = "user_id") -> str:
    """`value` when it is a valid user_id, else InvalidInput naming `field`."""
    if not isinstance(value, str) or not value:
        raise InvalidInput("Give user_id (1 to 128 letters, digits or . _ - : @ +).", field=field)
    if len(value) > USER_ID_MAX_CHARS:
        raise InvalidInput(f"user_id is {len(value)} characters; at most {USER_ID_MAX_CHARS}.", field=field)
    if _USER_ID.fullmatch(value) is None:
        raise InvalidInput(
            "user_id holds only letters, digits and . _ - : @ + (no space, control character or NUL).", field=field
        )
    return value
