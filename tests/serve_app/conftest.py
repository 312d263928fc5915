"""The serving layer's own tests: in-process apps, some over the real store."""

from tests.support.database import db  # noqa: F401 — the fixture
