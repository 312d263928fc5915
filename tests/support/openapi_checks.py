"""Schemathesis against a served Baton, judged by its JSON report; shared by tests/serve_app/test_openapi.py (an
in-process app) and tests/integration/test_openapi_served.py (the app on Ray Serve).

`st run --checks all`: no 5xx, every status documented, every response body and header as documented, schema-valid
requests accepted and schema-invalid ones refused, 405 with `Allow` for undeclared methods, tokens enforced.
Schemathesis signs up and logs in by itself (POST /api/v1/auth/register, /login), so the routes behind the
bearer token are exercised too. Deterministic generation: the same cases each run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# Rules JSON Schema cannot state. For these operations a schema-valid request may still be refused, with the
# documented status named here; every other check applies to them unchanged.
REFUSED_FOR_RULES_BEYOND_THE_SCHEMA = {
    "/api/v1/items/timeline": ((422,), "end_at must be after start_at: a rule between two parameters"),
    "/api/v1/media/upload": ((415, 422), "the file's bytes must decode as the declared file_type"),
    "/api/v1/calendar/agenda": ((422,), "end_at must be after start_at: a rule between two parameters"),
    "/api/v1/calendar/imports": ((422,), "the file's bytes must be an iCalendar file"),
    "/api/v1/calendar/subscriptions": ((413, 422), "the URL's host must be allowed and answer with a calendar"),
    "/api/v1/calendar/caldav": ((422,), "the URL's host must not be a loopback or private address"),
    "/api/v1/write-requests": (
        (422,),
        "payload times in order (end_at not before start_at), distinct replan items, "
        "and the rules the sub-agents' payload models (protocol/write_payloads.py) "
        "check but do not yet state",
    ),
}
# Operations whose body carries a credential of its own, which generated data cannot know: every generated request is
# refused with 401 by design, so schemathesis' "only 401/403" warning says nothing about the sign-up there.
BODY_CREDENTIAL = {"POST /api/v1/auth/password": "current_password must be the account's password"}
ACCEPTED = ["2xx", "3xx", "401", "403", "404", "409", "429", "5xx"]  # schemathesis' own default for valid data


def config_toml() -> str:
    blocks = []
    for path, (statuses, _why) in REFUSED_FOR_RULES_BEYOND_THE_SCHEMA.items():
        expected = json.dumps(ACCEPTED + [str(s) for s in statuses])
        blocks.append(
            f'[[operations]]\ninclude-path = "{path}"\nchecks.positive_data_acceptance.expected-statuses = {expected}\n'
        )
    # an invalid body may also be refused for its size, before its schema is read (serve_app/http/limits.py)
    refused = ["400", "401", "403", "404", "405", "406", "409", "413", "415", "422", "428", "429", "5xx"]
    return f"[checks.negative_data_rejection]\nexpected-statuses = {json.dumps(refused)}\n\n" + "\n".join(blocks)


def run_schemathesis(base_url: str, workdir: Path, *, max_examples: int = 10, timeout_s: float = 300) -> dict:
    """`st run` against `base_url`'s /openapi.json; returns its JSON report."""
    workdir.mkdir(parents=True, exist_ok=True)
    config, report = workdir / "schemathesis.toml", workdir / "report.json"
    config.write_text(config_toml(), encoding="utf-8")
    # one worker: hypothesis' source inspection is not thread-safe on CPython 3.11 (it fails with "AST constructor
    # recursion depth mismatch" under several workers)
    command = [
        sys.executable,
        "-m",
        "schemathesis.cli",
        "--config-file",
        str(config),
        "run",
        f"{base_url}/openapi.json",
        "--checks",
        "all",
        "--max-examples",
        str(max_examples),
        "--generation-deterministic",
        "--workers",
        "1",
        "--request-timeout",
        "30",
        "--no-color",
        "--report",
        "json",
        "--report-json-path",
        str(report),
    ]
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=timeout_s, check=False)
    (workdir / "output.txt").write_text(done.stdout + done.stderr, encoding="utf-8")
    assert report.exists(), (
        f"schemathesis wrote no report (exit {done.returncode}):\n{done.stdout[-4000:]}{done.stderr[-4000:]}"
    )
    return json.loads(report.read_text(encoding="utf-8"))


def problems(report: dict) -> list[str]:
    """What the run found wrong: failures by kind with their operations, errors, an incomplete run, and
    operations it could not authenticate for (they would have gone untested)."""
    found = [f"{f['code']} {f['title']} x{f['count']}: {', '.join(f['operations'])}" for f in report["failures"]]
    found += [f"error: {e['title']} x{e['count']}" for e in report["errors"]]
    if not report["complete"] or report["stop_reason"] != "completed":
        found.append(f"the run stopped early: {report['stop_reason']}")
    if missing := [op for op in report["warnings"].get("missing_auth") or [] if op not in BODY_CREDENTIAL]:
        found.append(f"only 401/403 from {missing}: the sign-up did not take")
    if report["operations"]["tested"] != report["operations"]["selected"]:
        found.append(f"tested {report['operations']['tested']} of {report['operations']['selected']} operations")
    return found


def assert_conforms(base_url: str, workdir: Path, **options) -> dict:
    """Run schemathesis and fail with everything it found (the full output is in `workdir`/output.txt)."""
    report = run_schemathesis(base_url, workdir, **options)
    found = problems(report)
    assert not found, "schemathesis found:\n" + "\n".join(found) + f"\n(details: {workdir / 'output.txt'})"
    return report
