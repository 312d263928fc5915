"""A stop signal to the whole process group (Ctrl-C, systemd's KillMode=control-group, a cancelled CI job) stops the
launcher, Ray, HAProxy and the embedded PostgreSQL within 15 s, and the next start comes up cleanly.

The app runs its real serving graph with no-op models, no media deployments and no Planner: what is tested is the
stopping (the Planner's engine processes are its replica's children: tests/integration/test_llm_served.py)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import yaml

from serve_app.ops import launcher
from tests.support.packs import CONFIG_DIR, ROOT, STATE_DIR

STOP_WITHIN_S = 15.0
START_WITHIN_S = 240.0


def _noop_app(tmp: Path) -> Path:
    config = tmp / "config"
    shutil.copytree(CONFIG_DIR, config)
    baton = yaml.safe_load((config / "baton.yaml").read_text(encoding="utf-8"))
    baton["models"]["noop"] = True
    (config / "baton.yaml").write_text(yaml.safe_dump(baton, allow_unicode=True), encoding="utf-8")
    serve = yaml.safe_load((CONFIG_DIR / "serve_local.yaml").read_text(encoding="utf-8"))
    app = serve["applications"][0]
    app["args"].update(config_dir=str(config), media=False, planner="none")
    app["deployments"] = [d for d in app["deployments"] if d["name"] not in ("ASR", "OCR", "Planner")]
    path = tmp / "serve.yaml"
    path.write_text(yaml.safe_dump(serve), encoding="utf-8")
    return path


def _naming(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def _postmaster(pgdata: Path) -> int | None:
    try:
        pid = int((pgdata / "postmaster.pid").read_text().splitlines()[0])
        os.kill(pid, 0)
        return pid
    except (FileNotFoundError, ProcessLookupError, ValueError, IndexError):
        return None


def _private_folders(port: int) -> list[Path]:
    return list(Path(tempfile.gettempdir()).glob(f"baton-{port}-*"))


def _run_once(serve_yaml: Path, pgdata: Path, log: Path) -> float:
    port, metrics_port = launcher.free_ports(2)
    env = {**os.environ, "BATON_STATE_DIR": str(STATE_DIR), "BATON_METRICS_PORT": str(metrics_port)}
    env.pop("DATABASE_URL", None)
    with log.open("w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "serve_app.ops.launcher",
                "--config",
                str(serve_yaml),
                "--port",
                str(port),
                "--pgdata",
                str(pgdata),
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        started = time.time()
        while "Baton is serving" not in log.read_text(errors="replace"):
            assert proc.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.time() - started < START_WITHIN_S, "no serving line"
            time.sleep(0.5)
        turn = httpx.post(
            f"http://127.0.0.1:{port}/api/v1/agent/chat", json={"user_id": "stop", "text": "打开车窗"}, timeout=10
        )
        assert turn.status_code == 200 and turn.json()["timings"]["degraded"] == [], turn.text
        session = (STATE_DIR / "run" / str(port) / "ray-session").read_text().strip()
        assert session and _naming(session), "the Ray session's processes are running"
        assert _postmaster(pgdata) is not None
        signalled = time.monotonic()
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(STOP_WITHIN_S)
        while (
            _naming(session) or _naming(f"baton-{port}-") or _postmaster(pgdata) or _private_folders(port)
        ) and time.monotonic() - signalled < STOP_WITHIN_S:
            time.sleep(0.2)
        stopped = time.monotonic() - signalled
        assert not _naming(session), "Ray processes outlived the stop"
        assert not _naming(f"baton-{port}-"), "HAProxy outlived the stop"  # its private folder (node_env.haproxy_dir)
        assert _postmaster(pgdata) is None, "PostgreSQL outlived the stop"
        assert not _private_folders(port), "the run's private HAProxy folder outlived the stop"
        return stopped
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def test_a_group_stop_signal_leaves_nothing_behind_and_the_next_start_is_clean(tmp_path):
    serve_yaml = _noop_app(tmp_path)
    # not under pytest's 0700 temp root: the server runs as its own system user and must reach the folder
    folder = Path(tempfile.mkdtemp(prefix="baton-stop-pg-"))
    try:
        first = _run_once(serve_yaml, folder / "pgdata", tmp_path / "first.log")
        second = _run_once(serve_yaml, folder / "pgdata", tmp_path / "second.log")
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(f"stopped in {first:.1f} s, then again in {second:.1f} s")
    assert first <= STOP_WITHIN_S and second <= STOP_WITHIN_S
