"""The orchestrator's model client: which layout it composes and how its handles call the replicas."""

from __future__ import annotations

import pytest

from engine.model_client import ENCODER, HEADS
from serve_app.replicas.clients import FusedHandleModels, SplitHandleModels
from serve_app.replicas.orchestrator import model_client


class RecordingHandle:
    """Stands in for a DeploymentHandle: records the options it was copied with."""

    def __init__(self, name: str, options: dict | None = None) -> None:
        self.name, self.applied = name, options or {}

    def options(self, **kwargs) -> RecordingHandle:
        return RecordingHandle(self.name, {**self.applied, **kwargs})


def _settings(cockpit, calls: str):
    _, settings = cockpit
    return settings.model_copy(update={"serving": settings.serving.model_copy(update={"model_calls": calls})})


@pytest.mark.parametrize("calls, by_value", [("grpc", True), ("actor", False)])
def test_the_fused_client_calls_the_nlu_replica_by_value_over_grpc_unless_told_otherwise(cockpit, calls, by_value):
    client = model_client({"nlu": RecordingHandle("nlu")}, _settings(cockpit, calls))
    assert isinstance(client, FusedHandleModels)
    assert client._nlu.applied == ({"_by_reference": False} if by_value else {})


def test_the_split_client_sends_every_part_the_same_way(cockpit):
    handles = {name: RecordingHandle(name) for name in (ENCODER, *HEADS)}
    client = model_client(handles, _settings(cockpit, "grpc"))
    assert isinstance(client, SplitHandleModels)
    assert client._encoder.applied == {"_by_reference": False}
    assert all(client._heads[h].applied == {"_by_reference": False} for h in HEADS)


def test_an_unknown_transport_is_refused_at_load(cockpit):
    _, settings = cockpit
    with pytest.raises(ValueError, match="model_calls"):
        type(settings.serving).model_validate({**settings.serving.model_dump(), "model_calls": "http"})


@pytest.mark.parametrize(
    "options, replicas",
    [
        ({"autoscaling_config": {"min_replicas": 2, "max_replicas": 8}}, 8),
        ({"num_replicas": 3}, 3),
    ],
)
def test_the_pool_check_counts_the_most_replicas_serve_may_run(options, replicas):
    from types import SimpleNamespace

    from ray.serve._private.config import DeploymentConfig

    from serve_app.replicas.orchestrator import max_replicas

    context = SimpleNamespace(_deployment_config=DeploymentConfig(**options))
    assert max_replicas(context) == replicas  # type: ignore[arg-type]
