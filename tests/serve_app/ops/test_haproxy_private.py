"""The HAProxy ingress kept private (no Ray): the run's folder is made by mkdtemp (0700, an unguessable name), every
path Serve's HAProxy uses lies inside it, and the config Serve 2.60 renders from its template (rendered here by
Serve's own code) reaches HAProxy with a mode-600 admin socket, stats and Prometheus on the configured host and no
query string in the request log. Also: the token-less local mode refuses a non-loopback bind."""

from __future__ import annotations

import re
import signal
import stat
import subprocess
from pathlib import Path

import pytest

from serve_app.ops import node_env
from serve_app.ops.haproxy_guard import harden
from serve_app.ops.launcher import load_serve_config, replica_environment

ROOT = Path(__file__).resolve().parents[3]
SERVE_LOCAL = ROOT / "config" / "serve_local.yaml"
HAPROXY_PATHS = (
    "RAY_SERVE_HAPROXY_CONFIG_FILE_LOC",
    "RAY_SERVE_HAPROXY_SOCKET_PATH",
    "RAY_SERVE_HAPROXY_SERVER_STATE_BASE",
    "RAY_SERVE_HAPROXY_SERVER_STATE_FILE",
    "RAY_SERVE_HAPROXY_METRICS_SOCKET_PATH",
    "RAY_SERVE_HAPROXY_BINARY_PATH",
)


def _serve_rendered(folder: Path, stats_port: int, metrics_port: int) -> str:
    """The config Ray Serve's HAProxyApi writes (its template, its code), without Ray running."""
    from ray.serve._private.haproxy import HAProxyApi, HAProxyConfig
    from ray.serve.config import HTTPOptions

    api = HAProxyApi(
        cfg=HAProxyConfig(
            http_options=HTTPOptions(host="127.0.0.1", port=8000),
            socket_path=str(folder / "admin.sock"),
            server_state_base=str(folder),
            server_state_file=str(folder / "server-state"),
            metrics_socket_path=str(folder / "metrics.sock"),
            stats_port=stats_port,
            metrics_port=metrics_port,
        ),
        config_file_path=str(folder / "haproxy.cfg"),
    )
    api._generate_config_file_internal()
    return (folder / "haproxy.cfg").read_text(encoding="utf-8")


def test_every_haproxy_path_is_in_a_private_folder_of_the_run(tmp_path):
    config = load_serve_config(SERVE_LOCAL, {"BATON_STATE_DIR": str(tmp_path)}, port=8131)
    inherited = replica_environment(config, {})
    folder = node_env.haproxy_dir(8131)
    info = folder.stat()
    assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == __import__("os").geteuid()
    assert not folder.name.endswith("8131")  # not a name anyone can predict and create first
    for name in HAPROXY_PATHS:
        assert Path(inherited[name]).is_relative_to(folder), name
    assert len(inherited["RAY_SERVE_HAPROXY_SOCKET_PATH"]) + 57 <= 97  # Ray adds /<node id>; HAProxy's limit
    assert (
        replica_environment(config, {})["RAY_SERVE_HAPROXY_SOCKET_PATH"] == inherited["RAY_SERVE_HAPROXY_SOCKET_PATH"]
    )
    node_env.stop_haproxy(8131)
    assert not folder.exists()


def test_the_config_serve_renders_is_made_private_before_haproxy_reads_it(tmp_path):
    rendered = _serve_rendered(tmp_path, 31555, 31556)
    # what Serve's template hard-codes (no environment variable changes it)
    assert "mode 666 level admin" in rendered and "bind *:31555" in rendered and "bind :31556" in rendered
    assert "option httplog" in rendered

    hardened = harden(rendered, "127.0.0.1")
    assert re.search(r"stats socket \S+/admin.sock mode 600 level admin expose-fd listeners", hardened)
    assert "mode 666" not in hardened
    binds = re.findall(r"^\s*bind (\S+)", hardened, flags=re.M)
    assert sorted(binds) == ["127.0.0.1:31555", "127.0.0.1:31556", "127.0.0.1:8000"]
    assert "option httplog" not in hardened and not re.search(r"%(\{[^}]*\})?r(?![a-z])", hardened)
    assert '\\"%HM %HP %HV\\"' in hardened
    assert harden(hardened, "127.0.0.1") == hardened  # a reload's already-hardened config stays as it is


def test_the_guard_haproxy_runs_rewrites_the_file_and_runs_the_real_binary(tmp_path):
    _serve_rendered(tmp_path, 31557, 31558)
    script = node_env.write_haproxy_guard(tmp_path, "127.0.0.1")
    assert stat.S_IMODE(script.stat().st_mode) == 0o700
    checked = subprocess.run([str(script), "-c", "-f", str(tmp_path / "haproxy.cfg")], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr + checked.stdout  # HAProxy itself accepts the hardened config
    assert "valid" in checked.stdout
    on_disk = (tmp_path / "haproxy.cfg").read_text(encoding="utf-8")
    assert "mode 600 level admin" in on_disk and "bind 127.0.0.1:31557" in on_disk and "%HP" in on_disk


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "::", "baton.example.com"])
def test_the_local_mode_refuses_to_start_on_a_non_loopback_bind(tmp_path, host):
    config = load_serve_config(SERVE_LOCAL, {"BATON_STATE_DIR": str(tmp_path)}, port=8132)
    config["http_options"]["host"] = host
    with pytest.raises(RuntimeError, match=r"auth.require_token is false.*serves loopback only"):
        replica_environment(config, {})
    config["applications"][0]["args"].setdefault("overrides", {})["auth"] = {"require_token": True}
    assert replica_environment(config, {})["RAY_SERVE_ENABLE_HA_PROXY"] == "1"  # with tokens it may bind anywhere
    for loopback in ("127.0.0.1", "localhost", "::1"):
        config["applications"][0]["args"]["overrides"]["auth"] = {"require_token": False}
        config["http_options"]["host"] = loopback
        replica_environment(config, {})
    node_env.stop_haproxy(8132)


def test_the_reaper_removes_the_private_folder_once_the_launcher_is_gone(tmp_path):
    from serve_app.ops import reaper

    folder = tmp_path / "baton-8133-private"
    (folder / "node").mkdir(parents=True)
    (folder / "node" / "haproxy.cfg").write_text("global\n", encoding="utf-8")
    launcher = subprocess.Popen(["true"])
    launcher.wait()
    kept = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        assert reaper.main(["--launcher", str(launcher.pid), "--remove", str(folder)]) == 0
    finally:
        for sig, handler in kept.items():  # the reaper ignores stop signals on purpose; this process must not
            signal.signal(sig, handler)
    assert not folder.exists() and tmp_path.exists()
