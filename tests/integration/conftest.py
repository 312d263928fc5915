"""The integration tier: the real Baton app (tests/support/served.py, shared with the security tier) and headless
Chromium for the demo page."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

# Debian's Chromium (Makefile SYSTEM_PACKAGES), never a browser Playwright would download
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def chromium_args() -> list[str]:
    """Launch flags on top of CHROMIUM_ARGS; a module overrides this fixture to add its own."""
    return []


@pytest.fixture(scope="module")
def browser(chromium_args: list[str]) -> Iterator[Any]:
    """Headless Chromium driven by Playwright, one per module."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *chromium_args])
        try:
            yield chromium
        finally:
            chromium.close()
