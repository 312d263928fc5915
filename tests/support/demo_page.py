"""Driving the demo page (GET /demo) in Chromium, for the browser tests: open it as a user, say something with the
keyboard, wait for the answer, save a screenshot."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

from playwright.sync_api import Browser, Page, WebSocketRoute, expect

DESKTOP = {"width": 1280, "height": 900}
PHONE = {"width": 360, "height": 740}
TURN_TIMEOUT_MS = 30_000  # a turn on the shared 2-core machine, with room for load from other tests
expect.set_options(timeout=TURN_TIMEOUT_MS)


class DemoPage:
    def __init__(
        self,
        browser: Browser,
        url: str,
        folder: Path,
        *,
        viewport: dict = DESKTOP,
        token: str | None = None,
        permissions: list[str] | None = None,
        route_socket: Callable[[WebSocketRoute], None] | None = None,
    ) -> None:
        """`route_socket`: sees every WebSocket the page opens (Playwright's routing), to stand in for the network."""
        self.folder = folder
        self.context = browser.new_context(
            viewport=viewport, timezone_id="Asia/Shanghai", locale="zh-CN", permissions=permissions or []
        )
        self.page: Page = self.context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda exc: self.errors.append(str(exc)))
        if route_socket is not None:
            self.page.route_web_socket("**/ws/v1/conversation*", route_socket)
        self.user_id = f"demo-{uuid.uuid4().hex[:8]}"
        # the page keeps its local-mode user in this browser's localStorage (never from its URL): a fresh context
        # starts as this user
        self.context.add_init_script(f"localStorage.setItem('baton.user_id', {self.user_id!r})")
        self.page.goto(f"{url}/demo")
        if token:
            self.page.fill("#token", token)
            self.page.press("#token", "Enter")  # submits the identity form: connects with the token
            expect(self.page.locator(".msg.divider").last).to_have_text("signed in with a token")
        self.wait_connected()

    def wait_connected(self) -> None:
        expect(self.page.locator("#connection")).to_have_attribute("data-state", "open")

    def say(self, text: str) -> None:
        """Type a message and send it with Enter, as a keyboard user would; returns once its turn has ended."""
        box = self.page.locator("#message")
        box.focus()
        self.page.keyboard.type(text)
        self.page.keyboard.press("Enter")
        self.wait_answered()

    def wait_answered(self) -> None:
        self.page.wait_for_function("window.batonDemo.busy() === 0", timeout=TURN_TIMEOUT_MS)

    def last_bot(self):
        return self.page.locator(".msg.bot, .msg.snapshot").last

    def card(self, kind: str):
        """The newest card of a kind (`confirmation`, `clarification`, `selection`), found by its key: it stays the
        same card after the turns that follow it."""
        newest = self.page.locator(f"[data-card={kind}]").last
        expect(newest).to_be_visible()
        return self.page.locator(f"[data-card={kind}][data-key='{newest.get_attribute('data-key')}']")

    def shown_turn(self) -> dict:
        """The turn the details panel draws, as the page received it."""
        return self.page.evaluate("window.batonDemo.shown()")

    def screenshot(self, name: str) -> Path:
        """The page as it is now, saved in the test's folder."""
        path = self.folder / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        assert path.stat().st_size > 10_000, "a screenshot of a drawn page"
        return path

    def unlabelled_controls(self) -> list[str]:
        """Form controls a screen reader could not name (no <label>, no aria-label)."""
        return self.page.evaluate("""() => [...document.querySelectorAll('input, textarea, select')]
            .filter((el) => el.type !== 'hidden' && !el.labels.length && !el.getAttribute('aria-label'))
            .map((el) => el.outerHTML)""")

    def page_width(self) -> int:
        return self.page.evaluate("document.documentElement.scrollWidth")

    def close(self) -> None:
        """Keeps the last state (a screenshot and the page's text, for a failure) and checks no script failed."""
        self.page.screenshot(path=str(self.folder / "last-state.png"), full_page=True)
        (self.folder / "last-state.txt").write_text(self.page.inner_text("body"), encoding="utf-8")
        self.context.close()
        assert self.errors == [], f"script errors on the page: {self.errors}"
