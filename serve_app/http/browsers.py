"""What a browser may do: the Host a request names and the Origin it comes from (`BrowserGuard` applies it).

In the token-less local mode the only credential is a `user_id`, so a web page the operator visits must not reach the
app at all: not by DNS rebinding (a name of the attacker's that resolves to 127.0.0.1: the request then names the
attacker's Host, refused unless it is a loopback name or in `auth.allowed_hosts`), and not cross-origin (a page of
another origin opening the WebSocket, or posting a form or a fetch: its `Origin` is neither the app's own nor in
`auth.allowed_origins`). With tokens the Host is not checked (a rebound page holds no token; a cluster is reached
by names of its own), but a cross-origin WebSocket or state-changing request is refused all the same.

Programs (curl, SDKs, the tests) send no Origin and pass; a browser always sends it on a WebSocket handshake and on
every request but GET and HEAD.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from starlette.types import Scope

from config.serving import AuthConfig
from engine.errors import BatonError

LOOPBACK_NAMES = frozenset({"localhost", "localhost.", "ip6-localhost"})
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
DEFAULT_PORTS = {"http": 80, "ws": 80, "https": 443, "wss": 443}


class HostNotAllowed(BatonError):
    """The request names a Host the app does not answer to (421)."""

    code = "host_not_allowed"


class OriginNotAllowed(BatonError):
    """A browser request from another origin (403; the WebSocket closes with 1008)."""

    code = "origin_not_allowed"


def is_loopback(host: str) -> bool:
    """Whether `host` (a name or an address, IPv6 with or without brackets) is this machine's loopback."""
    name = host.strip().strip("[]").lower()
    if name in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def split_host(value: str) -> tuple[str, int | None]:
    """`name[:port]` or `[v6][:port]` into the lower-cased name and the port (None when absent or not a number)."""
    value = value.strip().lower()
    if value.startswith("["):
        name, _, rest = value[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ""
    elif value.count(":") == 1:
        name, _, port = value.partition(":")
    else:
        name, port = value, ""
    return name.rstrip("."), int(port) if port.isdigit() else None


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key == name:
            return str(value.decode("latin-1"))
    return None


class BrowserPolicy:
    def __init__(self, config: AuthConfig) -> None:
        self._check_host = not config.require_token
        self._hosts = frozenset(split_host(h)[0] for h in config.allowed_hosts)
        self._origins = frozenset(_origin_key(o) for o in config.allowed_origins)

    def check(self, scope: Scope) -> None:
        """HostNotAllowed or OriginNotAllowed for a request a browser was led into; nothing otherwise."""
        host = _header(scope, b"host")
        if self._check_host and host is not None:
            name, _ = split_host(host)
            if not is_loopback(name) and name not in self._hosts:
                raise HostNotAllowed(
                    f"This local-mode Baton answers only on loopback names (and auth.allowed_hosts), not {name!r}.",
                    field="Host",
                )
        origin = _header(scope, b"origin")
        if origin is None or (scope["type"] == "http" and scope["method"] in SAFE_METHODS):
            return
        key = _origin_key(origin)
        if host is not None and _same_site(key, split_host(host)):
            return
        if key in self._origins:
            return
        raise OriginNotAllowed(
            f"Requests from the web origin {origin!r} are refused: not this app's origin nor in auth.allowed_origins.",
            field="Origin",
        )


def _same_site(origin: tuple[str, str, int | None], host: tuple[str, int | None]) -> bool:
    """The origin names the Host the request came to: same name, same port or none given (the scheme's default). The
    scheme is not compared: TLS may end in front of the app, which then sees http for an https page."""
    scheme, name, port = origin
    return name == host[0] and (port == host[1] or (host[1] is None and port == DEFAULT_PORTS.get(scheme)))


def _origin_key(origin: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) with the scheme's default port filled in; an opaque origin ("null") matches nothing."""
    parts = urlsplit(origin.strip().lower())
    if not parts.scheme or not parts.netloc:
        return ("opaque", origin, None)
    name, port = split_host(parts.netloc)
    return parts.scheme, name, port if port is not None else DEFAULT_PORTS.get(parts.scheme)
