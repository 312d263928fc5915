"""The Prometheus listener binds the address it is given (serving.metrics_host), not a fixed one."""

from __future__ import annotations

import time
import urllib.error
import urllib.request

from serve_app.metrics import TurnMetrics
from serve_app.ops.launcher import free_ports


def _get(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as resp:
            return resp.read().decode()
    except (urllib.error.URLError, OSError):
        return None


def test_the_listener_binds_the_configured_address_only(monkeypatch):
    monkeypatch.delenv("PROMETHEUS_MULTIPROC_DIR", raising=False)
    (port,) = free_ports(1)
    metrics = TurnMetrics()
    metrics.shed.inc()
    metrics.serve(port, host="127.0.0.2")  # another loopback address: reachable there, not on 127.0.0.1
    deadline, body = time.time() + 10, None
    while body is None and time.time() < deadline:
        body = _get(f"http://127.0.0.2:{port}/metrics")
        time.sleep(0.05)
    assert body is not None and "baton_shed_turns_total 1.0" in body
    assert _get(f"http://127.0.0.1:{port}/metrics") is None
