"""The one user_id rule shared by HTTP and the WebSocket."""

from __future__ import annotations

import pytest

from protocol.user_id import USER_ID_MAX_CHARS, valid_user_id


@pytest.mark.parametrize("value", ["u1", "car-1", "张三", "local:x", "a.b@c+d_e", "a" * USER_ID_MAX_CHARS])
def test_valid_user_ids_pass_unchanged(value):
    assert valid_user_id(value) == value


@pytest.mark.parametrize(
    "value", ["", "u\x00", "a" * (USER_ID_MAX_CHARS + 1), "a b", "a/b", "a\n", "\u202eab", "a\tb", "../x"]
)
def test_anything_else_is_refused(value):
    with pytest.raises(ValueError, match="user_id"):
        valid_user_id(value)
