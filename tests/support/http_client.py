"""An HTTP client for the integration tests that behaves as a user's client should: a turn shed with 503
`overloaded` and `Retry-After` (nothing ran: the server says retry) is sent again after that wait.

On this 2-core machine a disk stall of a few hundred ms makes a turn's lease or store phase run out of budget now and
then; the server sheds it, as its contract says, and a test of what a turn does would otherwise fail on that. Tests
of shedding itself (test_overload.py) use a plain client.
"""

from __future__ import annotations

import json
import time

import httpx


class RetryAfter(httpx.BaseTransport):
    """Resends a request answered 503 `overloaded` with `Retry-After`, up to `tries` sends in all."""

    def __init__(self, tries: int = 3) -> None:
        self._inner = httpx.HTTPTransport()
        self._tries = tries

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        for attempt in range(self._tries):
            response = self._inner.handle_request(request)
            wait = response.headers.get("retry-after")
            if response.status_code != 503 or wait is None or attempt == self._tries - 1:
                return response
            body = response.read()
            try:
                code = json.loads(body)["error"]["code"]
            except (ValueError, KeyError, TypeError):
                code = None
            if code != "overloaded":
                return response
            response.close()
            time.sleep(float(wait))
        raise AssertionError("unreachable")

    def close(self) -> None:
        self._inner.close()


def served_client(url: str, timeout: float) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=timeout, transport=RetryAfter())
