"""The one base of every settings section: unknown keys are refused, and a loaded value never changes."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
