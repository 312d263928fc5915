"""A registered feed URL fetched under the operator's rules: only hosts named in `calendar.fetch.allowed_hosts`, never
an address on this machine or a private network unless `allow_private`, redirects followed only to the same host,
the whole fetch inside `timeout_s`, the body cut off past `max_bytes`.

The address check sits in the resolver the connection itself uses (and on an IP literal, which no resolver sees), so
a name that resolves to a public address when checked cannot connect to a private one afterwards."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from typing import Any

import aiohttp
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.resolver import ThreadedResolver
from yarl import URL

from config.calendar import FeedFetchConfig
from engine.calendars.model import (
    CalendarTooLarge,
    FeedAddressRefused,
    FeedHostNotAllowed,
    FeedRedirectRefused,
    FeedRefused,
    FeedTimeout,
    FeedUnreachable,
)

REDIRECTS = frozenset({301, 302, 303, 307, 308})
CHUNK = 65536


def refused_address(address: str) -> bool:
    """Whether an address is one a feed may not reach without `allow_private`: anything not globally routable."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return not (mapped or ip).is_global


def checked_url(url: str, *, allowed_hosts: list[str] | None, allow_private: bool, field: str = "url") -> URL:
    """`url` parsed, with an http(s) scheme, a host that is allowed (None: any host) and no refused IP literal."""
    try:
        parsed = URL(url)
    except (ValueError, TypeError):
        raise FeedRefused("The URL cannot be parsed.", field=field) from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise FeedRefused("A calendar URL is an http or https URL with a host.", field=field)
    if parsed.user or parsed.password:
        raise FeedRefused("A calendar URL carries no credentials.", field=field)
    host = parsed.host.lower()
    if allowed_hosts is not None and host not in allowed_hosts:
        raise FeedHostNotAllowed(f"Feeds from '{host}' are not allowed on this deployment.", field=field)
    try:
        literal = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        literal = None
    if literal is not None and not allow_private and refused_address(str(literal)):
        raise FeedAddressRefused(f"'{host}' is a loopback or private address.", field=field)
    return parsed


async def resolve_checked(host: str, port: int, *, allow_private: bool) -> None:
    """Resolve `host` and refuse it if any of its addresses is refused (for clients whose connections this module
    does not make, like the CalDAV library's)."""
    if allow_private:
        return
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise FeedUnreachable(f"'{host}' does not resolve ({exc.strerror or exc}).", field="url") from None
    if any(refused_address(str(info[4][0])) for info in infos):
        raise FeedAddressRefused(f"'{host}' resolves to a loopback or private address.", field="url")


class GuardedResolver(AbstractResolver):
    """The system resolver, refusing a name any of whose addresses is refused."""

    def __init__(self, *, allow_private: bool) -> None:
        self.allow_private = allow_private
        self.inner = ThreadedResolver()

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        infos = await self.inner.resolve(host, port, family)
        if not self.allow_private and any(refused_address(info["host"]) for info in infos):
            raise FeedAddressRefused(f"'{host}' resolves to a loopback or private address.", field="url")
        return infos

    async def close(self) -> None:
        await self.inner.close()


async def fetch_feed(url: str, cfg: FeedFetchConfig) -> bytes:
    """The body of the feed at `url`, or a typed refusal (FeedRefused and its kinds, CalendarTooLarge)."""
    start = checked_url(url, allowed_hosts=cfg.allowed_hosts, allow_private=cfg.allow_private)
    connector = aiohttp.TCPConnector(resolver=GuardedResolver(allow_private=cfg.allow_private), use_dns_cache=False)
    timeout = aiohttp.ClientTimeout(total=cfg.timeout_s)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout, trust_env=False) as session:
        try:
            async with asyncio.timeout(cfg.timeout_s):
                return await _follow(session, start, cfg)
        except TimeoutError:
            raise FeedTimeout(f"The feed did not answer within {cfg.timeout_s:g} s.", field="url") from None
        except aiohttp.ClientError as exc:
            cause: Any = exc.__cause__ or exc.__context__
            if isinstance(cause, FeedRefused):
                raise cause from None
            raise FeedUnreachable(f"The feed could not be fetched ({type(exc).__name__}).", field="url") from None


async def _follow(session: aiohttp.ClientSession, url: URL, cfg: FeedFetchConfig) -> bytes:
    for _ in range(cfg.max_redirects + 1):
        async with session.get(url, allow_redirects=False, headers={"Accept": "text/calendar"}) as response:
            if response.status in REDIRECTS:
                target = url.join(URL(response.headers.get("Location", "")))
                if (target.host or "").lower() != (url.host or "").lower() or target.scheme not in ("http", "https"):
                    raise FeedRedirectRefused(f"The feed redirects to another host ({target.host}).", field="url")
                url = target
                continue
            if response.status != 200:
                raise FeedUnreachable(f"The feed answered HTTP {response.status}.", field="url")
            if response.content_length is not None and response.content_length > cfg.max_bytes:
                raise CalendarTooLarge(
                    f"The feed is {response.content_length} bytes; at most {cfg.max_bytes} are read.", field="url"
                )
            body = bytearray()
            async for chunk in response.content.iter_chunked(CHUNK):
                body += chunk
                if len(body) > cfg.max_bytes:
                    raise CalendarTooLarge(
                        f"The feed passed {cfg.max_bytes} bytes; it was not read further.", field="url"
                    )
            return bytes(body)
    raise FeedRedirectRefused(f"The feed redirects more than {cfg.max_redirects} times.", field="url")
