"""The launcher's config handling (no Ray): absolute paths, pack/state selection, what replicas inherit, faults,
port."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from config.environment import FAULTS_FILE_ENV
from deployments.faults import FaultSet
from serve_app.args import AppArgs
from serve_app.ops.launcher import faults_file, load_serve_config, replica_environment, set_faults

ROOT = Path(__file__).resolve().parents[3]
SERVE_LOCAL = ROOT / "config" / "serve_local.yaml"
SERVE_SPLIT = ROOT / "config" / "serve_local_split.yaml"


def test_paths_become_absolute_and_env_selects_pack_and_state(tmp_path):
    config = load_serve_config(SERVE_LOCAL, {"BATON_PACK": "timeflow", "BATON_STATE_DIR": str(tmp_path)}, port=8123)
    args = config["applications"][0]["args"]
    assert Path(args["config_dir"]).is_absolute() and Path(args["config_dir"]) == ROOT / "config"
    assert args["state_dir"] == str(tmp_path.resolve()) and args["pack"] == "timeflow"
    assert config["http_options"] == {"host": "127.0.0.1", "port": 8123}
    settings = AppArgs.model_validate(args).settings()
    assert settings.pack == "timeflow" and settings.state_dir == tmp_path.resolve()


def test_replicas_inherit_forwarded_variables_and_no_secret_enters_the_serve_config(tmp_path):
    env = {
        "BATON_STATE_DIR": str(tmp_path),
        "BATON_FAULTS": "encoder:delay_ms=800",
        "DATABASE_URL": "postgresql://u:s3cret@db/baton",
        "BATON_AUTH_SECRET": "t0ps3cret",
        "BATON_CALENDAR_KEY": "calendar-k3y",
    }
    config = load_serve_config(SERVE_LOCAL, env, port=8124)
    inherited = replica_environment(config, env)
    assert inherited["BATON_FAULTS"] == "encoder:delay_ms=800"
    assert (
        inherited["DATABASE_URL"] == env["DATABASE_URL"] and inherited["BATON_AUTH_SECRET"] == env["BATON_AUTH_SECRET"]
    )
    assert inherited["BATON_CALENDAR_KEY"] == "calendar-k3y"  # calendar.key_env's variable
    assert inherited["HF_HUB_OFFLINE"] == "1"  # the app's runtime_env variables
    assert inherited[FAULTS_FILE_ENV] == str(faults_file(config))
    dumped = json.dumps(config)
    assert "s3cret" not in dumped and "t0ps3cret" not in dumped and "calendar-k3y" not in dumped
    without = replica_environment(load_serve_config(SERVE_LOCAL, {"BATON_STATE_DIR": str(tmp_path)}), {})
    assert "BATON_FAULTS" not in without and "DATABASE_URL" not in without


def test_the_local_default_is_serves_high_throughput_ingress(tmp_path):
    config = load_serve_config(SERVE_LOCAL, {"BATON_STATE_DIR": str(tmp_path)}, port=8125)
    inherited = replica_environment(config, {})
    assert inherited["RAY_SERVE_ENABLE_HA_PROXY"] == "1" and inherited["RAY_SERVE_THROUGHPUT_OPTIMIZED"] == "1"
    # ports of its own, so two Batons (or a benchmark's two systems) on one machine do not collide
    serve_defaults = {
        "RAY_SERVE_HAPROXY_METRICS_PORT": 9101,
        "RAY_SERVE_HAPROXY_STATS_PORT": 8404,
        "RAY_SERVE_FALLBACK_PROXY_HTTP_PORT": 8500,
        "RAY_SERVE_FALLBACK_PROXY_GRPC_PORT": 9500,
        "RAY_SERVE_DIRECT_INGRESS_MIN_HTTP_PORT": 30000,
        "RAY_SERVE_DIRECT_INGRESS_MIN_GRPC_PORT": 40000,
    }
    ports = {name: int(inherited[name]) for name in serve_defaults}
    assert all(ports[name] != default for name, default in serve_defaults.items()), ports
    assert len(set(ports.values())) == len(ports)
    for protocol in ("HTTP", "GRPC"):  # a block of ports for this run's replicas
        low, high = (int(inherited[f"RAY_SERVE_DIRECT_INGRESS_{end}_{protocol}_PORT"]) for end in ("MIN", "MAX"))
        assert high - low + 1 == 32, protocol
    assert len(inherited["RAY_SERVE_HAPROXY_SOCKET_PATH"]) + 41 <= 97  # HAProxy's limit, with Ray's own folder added


def test_metrics_port_override_reaches_the_replica_settings(monkeypatch):
    config = load_serve_config(SERVE_LOCAL, {"BATON_METRICS_PORT": "19464"})
    assert replica_environment(config, {"BATON_METRICS_PORT": "19464"})["BATON_METRICS_PORT"] == "19464"
    monkeypatch.setenv("BATON_METRICS_PORT", "19464")  # what a replica inherits
    assert AppArgs.model_validate(config["applications"][0]["args"]).settings().serving.metrics_port == 19464
    monkeypatch.delenv("BATON_METRICS_PORT")
    assert AppArgs.model_validate(config["applications"][0]["args"]).settings().serving.metrics_port == 9464


@pytest.mark.parametrize("path", [SERVE_LOCAL, SERVE_SPLIT])
def test_every_deployment_of_the_layout_is_configured_bounded_and_fractional(path):
    """Each Serve config names exactly its layout's deployments, each with autoscaling, both queue limits and a
    fractional CPU share."""
    app = load_serve_config(path, {})["applications"][0]
    deployments = {d["name"]: d for d in app["deployments"]}
    assert set(deployments) == set(AppArgs.model_validate(app["args"]).deployment_names())
    for name, dep in deployments.items():
        assert dep["max_ongoing_requests"] > 0, name
        assert "max_queued_requests" in dep, name
        assert 0 < dep["ray_actor_options"]["num_cpus"] < 1, name
        assert dep["autoscaling_config"]["min_replicas"] >= 1, name
    assert deployments["Orchestrator"]["autoscaling_config"]["max_replicas"] >= 2  # sessions live in PostgreSQL


def test_the_local_layout_is_inline_and_the_others_are_what_their_names_say():
    layouts = {
        path.name: yaml.safe_load(path.read_text())["applications"][0]["args"]["layout"]
        for path in (SERVE_LOCAL, SERVE_LOCAL.with_name("serve_local_fused.yaml"), SERVE_SPLIT)
    }
    assert layouts == {
        "serve_local.yaml": "inline",
        "serve_local_fused.yaml": "fused",
        "serve_local_split.yaml": "split",
    }


@pytest.mark.parametrize("bad", [{"config_dir": "config", "unknown": 1}, {"pack": 3}, {"layout": "sideways"}])
def test_app_args_are_validated(bad):
    with pytest.raises(ValueError):
        AppArgs.model_validate(bad)


def test_shed_answers_say_retry_after_like_admission_control():
    """The Orchestrator's own queue sheds (before any Baton code) carry the Retry-After admission control sends,
    and admission control, with its envelope and reason, sheds first."""
    app = load_serve_config(SERVE_LOCAL, {})["applications"][0]
    orchestrator = {d["name"]: d for d in app["deployments"]}["Orchestrator"]
    settings = AppArgs.model_validate(app["args"]).settings()
    assert orchestrator["max_queued_requests"] >= 0, "an unbounded queue lets a burst hang requests"
    assert orchestrator["max_ongoing_requests"] > settings.serving.admission.max_in_flight_turns
    assert orchestrator["backpressure_config"]["retry_after_s"] == settings.serving.retry_after_s


def test_faults_are_set_through_the_runs_file(tmp_path):
    config = load_serve_config(SERVE_LOCAL, {"BATON_STATE_DIR": str(tmp_path)}, port=8126)
    set_faults(config, "encoder:delay_ms=800;classifier:error=1")
    assert FaultSet.parse(faults_file(config).read_text()).faults["classifier"].error is True
    with pytest.raises(ValueError, match="Bad fault"):
        set_faults(config, "encoder:sideways=1")
    assert "classifier" in faults_file(config).read_text(), "a refused spec leaves the file as it was"


def test_per_run_ports_come_from_blocks_no_other_socket_takes_meanwhile():
    """Below the kernel's ephemeral range (any socket Ray opens may take a port there before we bind it) and inside
    the block asked for (a block that wrapped round once started on Serve's own default)."""
    from serve_app.ops import launcher, ports

    low, _ = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    ranges = [
        ports.REPLICA_PORT_RANGE,
        ports.LISTENER_PORT_RANGE,
        ports.HAPROXY_PORT_RANGE,
        ports.REPLICA_GRPC_PORT_RANGE,
    ]
    assert all(r.stop <= low for r in ranges)
    assert all(
        a.stop <= b.start
        for a, b in zip(sorted(ranges, key=lambda r: r.start), sorted(ranges, key=lambda r: r.start)[1:], strict=False)
    )
    for _ in range(40):
        first, last = ports.free_block(ports.REPLICA_PORTS, ports.REPLICA_GRPC_PORT_RANGE)
        assert (
            last - first + 1 == ports.REPLICA_PORTS
            and first in ports.REPLICA_GRPC_PORT_RANGE
            and last in ports.REPLICA_GRPC_PORT_RANGE
        )
    picked = launcher.free_ports(3)
    assert len(set(picked)) == 3 and all(p in ports.LISTENER_PORT_RANGE for p in picked)


def test_a_copied_serve_config_still_runs_the_planner_in_the_checkouts_llm_venv(tmp_path):
    """A benchmark writes its own copy of the Serve config elsewhere; the Planner's interpreter and the path to
    Baton's packages still name this checkout, not the copy's folder."""
    copy = tmp_path / "systems" / "baton" / "serve.yaml"
    copy.parent.mkdir(parents=True)
    copy.write_text(SERVE_LOCAL.read_text(encoding="utf-8"), encoding="utf-8")
    planner = next(d for d in load_serve_config(copy, {})["applications"][0]["deployments"] if d["name"] == "Planner")
    runtime_env = planner["ray_actor_options"]["runtime_env"]
    assert runtime_env["py_executable"] == str(ROOT / ".venv-llm" / "bin" / "python")
    assert runtime_env["env_vars"]["PYTHONPATH"] == str(ROOT)


def test_make_run_stops_with_an_error_naming_the_stage_that_never_answered(monkeypatch, tmp_path, capsys):
    """Readiness that cannot hang (issue 34, item 16): when /health never turns green, `make run` does not wait on;
    it says which stage held it back, stops what it started and exits non-zero."""
    from serve_app.ops import launcher

    stopped: list[int | None] = []
    monkeypatch.setattr(launcher.signal, "signal", lambda *a: None)  # this test process keeps its own handlers
    monkeypatch.setattr(launcher, "ensure_database", lambda *a, **k: None)
    monkeypatch.setattr(launcher, "start_reaper", lambda *a, **k: None)
    monkeypatch.setattr(launcher, "run_dir", lambda config: tmp_path)
    monkeypatch.setattr(launcher, "start", lambda *a, **k: "session")
    monkeypatch.setattr(launcher, "stop", stopped.append)

    def never_green(port: int, *, timeout_s: float, replicas: int = 1, apps: dict | None = None) -> str:
        raise TimeoutError(f"Baton did not become healthy on :{port} within 5 s (last: classifier warm-up: no answer)")

    monkeypatch.setattr(launcher, "wait_until_healthy", never_green)
    assert launcher.main(["--config", str(SERVE_LOCAL), "--port", "18123", "--timeout", "5"]) == 1
    assert "classifier warm-up" in capsys.readouterr().err
    assert stopped == [18123]
