"""The shared pydantic base model and the one error envelope used on every boundary."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class WireModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ErrorBody(WireModel):
    code: str
    message: str
    field: str | None = None


class ErrorEnvelope(WireModel):
    error: ErrorBody
