"""The store tier: a migrated pool on the session's PostgreSQL per test, no model build."""

from tests.support.database import db  # noqa: F401 — the fixture
