"""The served app (Ray Serve, the real models, the store) against its own /openapi.json: schemathesis finds no 5xx,
no undocumented status, no response unlike its schema and no schema-valid request refused (the checks are
tests/support/openapi_checks.py's, shared with the in-process test)."""

from __future__ import annotations

from tests.support.openapi_checks import assert_conforms


def test_schemathesis_finds_nothing_on_the_served_app(serve_app, tmp_path):
    assert_conforms(serve_app["url"], tmp_path, max_examples=10, timeout_s=900)
