"""The one rule for a claimed `user_id` (the token-less local mode's name of a user), shared by HTTP and the
WebSocket: 1 to 128 characters, letters (any script), digits and `.` `_` `-` `:` `@` `+` only — so no NUL, no
control character, no space and no path separator reaches the database, a log line or a media key."""

from __future__ import annotations

import re

USER_ID_MAX_CHARS = 128
USER_ID_PATTERN = rf"^[\w.:@+\-]{{1,{USER_ID_MAX_CHARS}}}$"
_USER_ID = re.compile(USER_ID_PATTERN)


def valid_user_id(value: str) -> str:
    """`value` when it is a valid user_id, else ValueError saying why (a pydantic validator as it is; the ingress
    turns it into `invalid_input` on the field `user_id`)."""
    if not isinstance(value, str) or not value:
        raise ValueError("give user_id (1 to 128 letters, digits or . _ - : @ +)")
    if len(value) > USER_ID_MAX_CHARS:
        raise ValueError(f"user_id is {len(value)} characters; at most {USER_ID_MAX_CHARS}")
    if _USER_ID.fullmatch(value) is None:
        raise ValueError("user_id holds only letters, digits and . _ - : @ + (no space, control character or NUL)")
    return value
