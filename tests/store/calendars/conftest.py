"""The calendar store tier: a migrated pool per test, and one Radicale per module."""

from tests.support.database import db  # noqa: F401 — the fixture
from tests.support.radicale import radicale  # noqa: F401 — the fixture
