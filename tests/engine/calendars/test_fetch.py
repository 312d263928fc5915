"""A feed URL is fetched only under the operator's rules, against a real HTTP server on 127.0.0.1: the allowed case,
then each refusal with its typed error (a host not allowed, a loopback or private address, a redirect elsewhere,
a body over the cap, a response slower than the timeout). No test sends anything to a private address: those are
refused before a connection is made."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp import web

from config.calendar import FeedFetchConfig
from engine.calendars.fetch import fetch_feed
from engine.calendars.model import (
    CalendarTooLarge,
    FeedAddressRefused,
    FeedHostNotAllowed,
    FeedRedirectRefused,
    FeedTimeout,
)
from tests.support.radicale import free_port

FEED = b"BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//EN\r\nEND:VCALENDAR\r\n"
MB = 1024 * 1024


async def _feed(request: web.Request) -> web.Response:
    return web.Response(body=FEED, content_type="text/calendar")


async def _chunked(request: web.Request) -> web.StreamResponse:
    response = web.StreamResponse()
    await response.prepare(request)
    for _ in range(50 * 16):  # 50 MB in 64 KiB chunks, unless the client leaves first
        await response.write(b"x" * 65536)
    return response


def _redirect(to: str):
    async def redirect(request: web.Request) -> web.Response:
        raise web.HTTPFound(to)

    return redirect


def _declared(size: int):
    async def declared(request: web.Request) -> web.Response:
        return web.Response(body=b"x" * size)

    return declared


async def _slow(request: web.Request) -> web.Response:
    await asyncio.sleep(60)
    return web.Response(body=FEED)


@pytest.fixture
async def server():
    port = free_port()
    app = web.Application()
    app.router.add_get("/feed.ics", _feed)
    app.router.add_get("/same", _redirect("/feed.ics"))
    app.router.add_get("/elsewhere", _redirect(f"http://localhost:{port}/feed.ics"))
    app.router.add_get("/declared", _declared(50 * MB))
    app.router.add_get("/chunked", _chunked)
    app.router.add_get("/slow", _slow)
    runner = web.AppRunner(app, handler_cancellation=True, shutdown_timeout=0.5)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


def _cfg(**changes) -> FeedFetchConfig:
    values = {"allowed_hosts": ["127.0.0.1"], "allow_private": True, "timeout_s": 1.0, "max_bytes": MB}
    return FeedFetchConfig(**{**values, **changes})


async def test_an_allowed_local_server_is_fetched_and_a_same_host_redirect_followed(server):
    assert await fetch_feed(f"{server}/feed.ics", _cfg()) == FEED
    assert await fetch_feed(f"{server}/same", _cfg()) == FEED


async def test_loopback_and_private_addresses_are_refused_unless_allowed(server):
    with pytest.raises(FeedAddressRefused) as refused:
        await fetch_feed(f"{server}/feed.ics", _cfg(allow_private=False))
    assert refused.value.code == "feed_address_refused" and refused.value.field == "url"
    with pytest.raises(FeedAddressRefused):  # refused before any connection: nothing is sent to 10.0.0.0/8
        await fetch_feed("http://10.20.30.40/feed.ics", _cfg(allowed_hosts=["10.20.30.40"], allow_private=False))
    port = server.rsplit(":", 1)[1]
    with pytest.raises(FeedAddressRefused):  # a name is judged by what it resolves to
        await fetch_feed(f"http://localhost:{port}/feed.ics", _cfg(allowed_hosts=["localhost"], allow_private=False))


async def test_a_host_not_allowed_and_a_redirect_elsewhere_are_refused(server):
    with pytest.raises(FeedHostNotAllowed):
        await fetch_feed(f"{server}/feed.ics", _cfg(allowed_hosts=["calendar.example.edu"]))
    with pytest.raises(FeedRedirectRefused):
        await fetch_feed(f"{server}/elsewhere", _cfg(allowed_hosts=["127.0.0.1", "localhost"]))


async def test_a_50_mb_body_and_a_60_s_response_are_refused(server):
    for path in ("/declared", "/chunked"):
        with pytest.raises(CalendarTooLarge):
            await fetch_feed(f"{server}{path}", _cfg())
    started = asyncio.get_running_loop().time()
    with pytest.raises(FeedTimeout):
        await fetch_feed(f"{server}/slow", _cfg())
    assert asyncio.get_running_loop().time() - started < 5
