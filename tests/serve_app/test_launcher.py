"""The launcher's config handling (no Ray): absolute paths, pack/state selection, fault forwarding, port."""
from __future__ import annotations

from pathlib import Path

import pytest

from serve_app.app_args import AppArgs
from serve_app.builder import MEDIA_DEPLOYMENTS, MODEL_DEPLOYMENTS
from serve_app.launcher import load_serve_config

ROOT = Path(__file__).resolve().parents[2]
SERVE_LOCAL = ROOT / "config" / "serve_local.yaml"


def test_paths_become_absolute_and_env_selects_pack_and_state(tmp_path):
    config = load_serve_config(SERVE_LOCAL, {"BATON_PACK": "timeflow", "BATON_STATE_DIR": str(tmp_path)}, port=8123)
    args = config["applications"][0]["args"]
    assert Path(args["config_dir"]).is_absolute() and Path(args["config_dir"]) == ROOT / "config"
    assert args["state_dir"] == str(tmp_path.resolve()) and args["pack"] == "timeflow"
    assert config["http_options"] == {"host": "127.0.0.1", "port": 8123}
    settings = AppArgs.model_validate(args).settings()
    assert settings.pack == "timeflow" and settings.state_dir == tmp_path.resolve()


def test_faults_are_forwarded_to_the_replicas_only_when_set():
    with_faults = load_serve_config(SERVE_LOCAL, {"BATON_FAULTS": "classifier:delay_ms=800"})
    assert with_faults["applications"][0]["runtime_env"]["env_vars"]["BATON_FAULTS"] == "classifier:delay_ms=800"
    without = load_serve_config(SERVE_LOCAL, {})
    assert "BATON_FAULTS" not in without["applications"][0]["runtime_env"]["env_vars"]
    assert without["applications"][0]["args"].get("pack") is None


def test_metrics_port_override_reaches_the_replica_settings(monkeypatch):
    config = load_serve_config(SERVE_LOCAL, {"BATON_METRICS_PORT": "19464"})
    assert config["applications"][0]["runtime_env"]["env_vars"]["BATON_METRICS_PORT"] == "19464"
    monkeypatch.setenv("BATON_METRICS_PORT", "19464")  # what runtime_env sets in the replica
    assert AppArgs.model_validate(config["applications"][0]["args"]).settings().serving.metrics_port == 19464
    monkeypatch.delenv("BATON_METRICS_PORT")
    assert AppArgs.model_validate(config["applications"][0]["args"]).settings().serving.metrics_port == 9464


def test_every_deployment_is_bounded_and_fractional():
    """The Serve config gives each deployment autoscaling, both queue limits and a fractional CPU share."""
    deployments = {d["name"]: d for d in load_serve_config(SERVE_LOCAL, {})["applications"][0]["deployments"]}
    assert set(deployments) == {"Orchestrator", *MODEL_DEPLOYMENTS.values(), *MEDIA_DEPLOYMENTS.values()}
    for name, dep in deployments.items():
        assert dep["max_ongoing_requests"] > 0, name
        assert "max_queued_requests" in dep, name
        assert 0 < dep["ray_actor_options"]["num_cpus"] < 1, name
        assert dep["autoscaling_config"]["min_replicas"] >= 1, name
    assert deployments["Orchestrator"]["autoscaling_config"]["max_replicas"] >= 2  # sessions live in PostgreSQL


@pytest.mark.parametrize("bad", [{"config_dir": "config", "unknown": 1}, {"pack": 3}])
def test_app_args_are_validated(bad):
    with pytest.raises(ValueError):
        AppArgs.model_validate(bad)


def test_proxy_sheds_say_retry_after_like_admission_control():
    """The proxy's own 503s (bounded Orchestrator queue) carry the Retry-After admission control sends."""
    deployments = {d["name"]: d for d in load_serve_config(SERVE_LOCAL, {})["applications"][0]["deployments"]}
    orchestrator = deployments["Orchestrator"]
    settings = AppArgs.model_validate(load_serve_config(SERVE_LOCAL, {})["applications"][0]["args"]).settings()
    assert orchestrator["max_queued_requests"] >= 0, "an unbounded proxy queue lets a burst hang requests"
    assert orchestrator["max_ongoing_requests"] > settings.serving.max_in_flight_turns
    assert orchestrator["backpressure_config"]["retry_after_s"] == settings.serving.retry_after_s
