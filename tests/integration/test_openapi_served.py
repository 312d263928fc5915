"""The served app (Ray Serve, the real models, the store) against its own /openapi.json: schemathesis finds no 5xx,
no undocumented status, no response unlike its schema and no schema-valid request refused (the checks are
tests/serve_app/openapi_checks.py's, shared with the in-process test)."""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "serve_app"))
from openapi_checks import assert_conforms  # noqa: E402


def test_schemathesis_finds_nothing_on_the_served_app(serve_app, tmp_path):
    assert_conforms(serve_app["url"], tmp_path, max_examples=10, timeout_s=900)
