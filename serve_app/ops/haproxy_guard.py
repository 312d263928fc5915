"""Run in place of HAProxy (`RAY_SERVE_HAPROXY_BINARY_PATH` names a script that runs this file, see
`serve_app.ops.node_env`): makes the config Ray Serve rendered private, then executes the real HAProxy on it.

Ray Serve 2.60 renders HAProxy's config from a fixed template (`ray.serve._private.haproxy_templates`): environment
variables choose its paths, ports and log target, but not these, which the template hard-codes:
- `stats socket <path> mode 666 level admin`: an admin socket anyone on the machine may use (drain servers, read
  every backend): mode 600 here;
- `listen stats` on `*:<port>` and `frontend prometheus` on `:<port>`: on every interface; here on the host given
  (`serving.metrics_host`);
- `option httplog`: every request line logged whole, a browser's `?access_token=` with it; here the same format
  with the path alone (`%HP`, no query string).

Stdlib only, no Baton import: it runs as a script, by path, in the process Serve spawns HAProxy from, and must not
slow that down. The rewrite takes the lock Serve writes the config under, so it never reads a half-written one.
"""

from __future__ import annotations

import fcntl
import os
import re
import sys

# HAProxy's `option httplog` format (configuration manual, "HTTP log format") with `%{+Q}r` (the request line, query
# string included) replaced by the method, the path without the query string, and the version
HTTPLOG_WITHOUT_QUERY = (
    'log-format "%ci:%cp [%tr] %ft %b/%s %TR/%Tw/%Tc/%Tr/%Ta %ST %B %CC %CS %tsc %ac/%fc/%bc/%sc/%rc %sq/%bq'
    ' %hr %hs \\"%HM %HP %HV\\""'
)
_SOCKET = re.compile(r"^(\s*stats socket \S+) mode \d+ ")
_BIND_ANY = re.compile(r"^(\s*bind )(?:\*|0\.0\.0\.0|::)?:(\d+)\s*$")
_PRIVATE_SECTIONS = ("listen stats", "frontend prometheus")


def harden(config: str, host: str) -> str:
    """`config` with the admin socket at mode 600, the stats and Prometheus listeners on `host`, and a request log
    without query strings."""
    bind_host = f"[{host}]" if ":" in host else host
    out, section = [], ""
    for line in config.splitlines():
        if line and not line[0].isspace():
            section = line.strip()
        if match := _SOCKET.match(line):
            line = f"{match.group(1)} mode 600 {line[match.end() :]}"
        elif section in _PRIVATE_SECTIONS and (match := _BIND_ANY.match(line)):
            line = f"{match.group(1)}{bind_host}:{match.group(2)}"
        elif line.strip() == "option httplog":
            line = line.replace("option httplog", HTTPLOG_WITHOUT_QUERY)
        out.append(line)
    return "\n".join(out) + ("\n" if config.endswith("\n") else "")


def harden_file(path: str, host: str) -> None:
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
        try:
            with open(path, encoding="utf-8") as f:
                config = f.read()
            hardened = harden(config, host)
            if hardened != config:
                draft = f"{path}.{os.getpid()}.tmp"
                with open(draft, "w", encoding="utf-8") as f:
                    f.write(hardened)
                os.chmod(draft, 0o600)
                os.replace(draft, path)
        finally:
            fcntl.flock(lock.fileno(), fcntl.LOCK_UN)


def main(argv: list[str]) -> None:
    """argv: the real HAProxy binary, the host for stats and metrics, then HAProxy's own arguments."""
    binary, host, *args = argv
    for flag, value in zip(args, args[1:], strict=False):
        if flag == "-f":
            harden_file(value, host)
    os.execv(binary, [binary, *args])


if __name__ == "__main__":
    main(sys.argv[1:])
