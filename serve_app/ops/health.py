"""Waiting until a run answers: every app's /health green on enough Orchestrator replicas."""

from __future__ import annotations

import json
import time
import urllib.request
from collections.abc import Mapping

from serve_app.ops.apps import APP_NAME


def wait_until_healthy(port: int, *, timeout_s: float, replicas: int = 1, apps: Mapping[str, str] | None = None) -> str:
    """Poll each app's /health until green on `replicas` distinct orchestrator replicas; returns the reason (what
    degrades), prefixed by the app's name when there are several. `apps`: name → route prefix (`route_prefixes`;
    default the one app at /)."""
    apps = apps or {APP_NAME: "/"}
    deadline = time.time() + timeout_s
    reasons = {name: _healthy(port, name, at, deadline, timeout_s, replicas=replicas) for name, at in apps.items()}
    if len(reasons) == 1:
        return next(iter(reasons.values()))
    return "; ".join(f"{name}: {reason}" for name, reason in reasons.items() if reason)


def _healthy(port: int, app_name: str, prefix: str, deadline: float, timeout_s: float, *, replicas: int) -> str:
    from ray import serve

    from serve_app.http.middleware import REPLICA_HEADER

    path = f"{prefix.rstrip('/')}/health"
    url = f"http://127.0.0.1:{port}{path}"
    last, green = "no answer", set()
    while time.time() < deadline:
        status = serve.status().applications.get(app_name)
        if status is not None and status.status == "DEPLOY_FAILED":
            raise RuntimeError(f"Deploy failed: {status.message}")
        try:
            with urllib.request.urlopen(url, timeout=2) as resp:
                green.add(resp.headers.get(REPLICA_HEADER))
                if len(green) >= replicas:
                    return str(json.load(resp).get("reason", ""))
                continue
        except OSError as exc:
            last = (exc.read().decode("utf-8", "replace") if hasattr(exc, "read") else str(exc))[:200]
            green.clear()
        time.sleep(0.5)
    raise TimeoutError(f"Baton did not become healthy on :{port}{path} within {timeout_s:.0f} s (last: {last})")
