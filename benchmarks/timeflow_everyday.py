"""`python -m benchmarks.timeflow_everyday`: the held-out everyday TimeFlow set, over HTTP, scored.

Starts Baton with the timeflow pack (on a throwaway embedded PostgreSQL unless DATABASE_URL is set, its clock pinned
at the set's `now`), or targets `--url`. Each case runs as a new account: its setup items are written through the
write gate (POST /api/v1/write-requests + decide), its first turn is `POST /api/v1/agent/chat`, an answer goes to
`/api/v1/agent/fill-slots` only when the turn before asked a clarification, and a write waiting for its
confirmation is confirmed (确认). Scores (benchmarks/timeflow_everyday_score.py): agent + function, time range,
title, and whether every clarification answered with the missing information ends in a confirmation. A case whose
turn ran degraded (a model stage missed its budget on a busy machine) is run again as a new account, at most twice,
and counted. Writes JSON, markdown and a figure under benchmarks/results/timeflow_everyday/.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import uuid
from dataclasses import asdict
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import httpx
import yaml

from benchmarks.outputs import provenance, write
from benchmarks.timeflow_everyday_report import figure, markdown
from benchmarks.timeflow_everyday_score import observe, score, summarize

ROOT = Path(__file__).resolve().parent.parent
HELD_OUT = ROOT / "benchmarks" / "data" / "timeflow_everyday_heldout.yaml"
ATTEMPTS = 3


class Account:
    """One new user's conversation over HTTP; a shed request (429 / 503) is sent again after its Retry-After."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        body = self._post(
            "/api/v1/auth/register",
            {"email": f"e-{uuid.uuid4().hex[:12]}@example.com", "password": "benchmark-password"},
        )
        self.headers = {"Authorization": f"Bearer {body['access_token']}"}
        self.user_id = body["user_id"]
        self.session = f"everyday-{uuid.uuid4().hex[:10]}"

    def _post(self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None) -> dict[str, Any]:
        for _ in range(30):
            resp = self.client.post(path, json=body, headers=headers or {})
            if resp.status_code in (429, 503):
                time.sleep(float(resp.headers.get("Retry-After", "1")))
                continue
            if resp.status_code >= 400:
                raise RuntimeError(f"{path} answered {resp.status_code}: {resp.text[:300]}")
            answer: dict[str, Any] = resp.json()
            return answer
        raise RuntimeError(f"{path} stayed shed")

    def seed(self, item: dict[str, str], tz: ZoneInfo) -> str:
        """A schedule item written through the gate; returns its id."""
        payload = {
            "item_type": "schedule",
            "title": item["title"],
            "start_at": datetime_local(item["start"], tz),
            "end_at": datetime_local(item["end"], tz),
        }
        created = self._post(
            "/api/v1/write-requests",
            {
                "action": "create",
                "target_type": "task_item",
                "payload": payload,
                "preview_text": f"新建 {item['title']}",
            },
            self.headers,
        )
        decided = self._post(
            f"/api/v1/write-requests/{created['write_request_id']}/decide",
            {"decision": "confirmed", "idempotency_key": uuid.uuid4().hex},
            self.headers,
        )
        return str(decided["applied_target_id"])

    def turn(self, route: str, text: str) -> dict[str, Any]:
        body = {
            "user_id": self.user_id,
            "session_id": self.session,
            "text": text,
            "client_message_id": uuid.uuid4().hex,
        }
        return self._post(f"/api/v1/agent/{route}", body, self.headers)


def datetime_local(value: str, tz: ZoneInfo) -> str:
    from datetime import datetime

    return datetime.fromisoformat(value).replace(tzinfo=tz).isoformat()


def _degraded(response: dict[str, Any]) -> bool:
    return bool((response.get("timings") or {}).get("degraded"))


def run_case(client: httpx.Client, case: dict[str, Any], tz: ZoneInfo) -> dict[str, Any]:
    """One case as a new account; again (a new account) while a turn ran degraded, up to ATTEMPTS times."""
    for attempt in range(1, ATTEMPTS + 1):
        account = Account(client)
        items = {account.seed(item, tz): item["title"] for item in case.get("setup", [])}
        said = [case["turns"][0]]
        responses = [account.turn("chat", case["turns"][0])]
        for turn in case["turns"][1:]:
            asked = (responses[-1].get("agent") or {}).get("status") == "waiting_clarification"
            if asked:
                said.append(turn["answer"])
                responses.append(account.turn("fill-slots", turn["answer"]))
        applied = None
        if responses[-1].get("status") == "waiting_confirmation":
            confirmed = account.turn("fill-slots", "确认")
            applied = (confirmed.get("agent") or {}).get("status") == "applied"
        if not any(_degraded(r) for r in responses) or attempt == ATTEMPTS:
            break
    seen = observe(responses, items, applied=applied)
    observed = {k: (v.isoformat() if hasattr(v, "isoformat") else v) for k, v in asdict(seen).items()}
    return {
        "id": case["id"],
        "said": said,
        "attempts": attempt,
        "degraded": any(_degraded(r) for r in responses),
        "statuses": [r.get("status") for r in responses],
        "observed": observed,
        "expect": case["expect"],
        "score": score(case, seen, tz),
    }


def run_set(url: str, held_out: dict[str, Any]) -> list[dict[str, Any]]:
    tz = ZoneInfo(held_out["timezone"])
    with httpx.Client(base_url=url, timeout=60) as client:
        return [run_case(client, case, tz) for case in held_out["cases"]]


def _serve(held_out: dict[str, Any], planner: str | None) -> tuple[str, Any]:
    """Baton on a free port with the timeflow pack and the set's clock; returns its URL and a stop function."""
    from serve_app.ops import launcher
    from store.embedded import EmbeddedPostgres

    [port] = launcher.free_ports(1)
    env = {**os.environ, "BATON_PACK": "timeflow"}
    database = None
    if not env.get("DATABASE_URL"):
        database = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="baton-bench-pg-")) / "pgdata")
        env["DATABASE_URL"] = database.start()
    config = launcher.load_serve_config(ROOT / "config" / "serve_local.yaml", env, port=port)
    app = config["applications"][0]
    app["args"].setdefault("overrides", {})["testing"] = {"now": held_out["now"]}
    if planner is not None:
        app["args"]["planner"] = planner
        if planner == "none":
            app["deployments"] = [d for d in app["deployments"] if d["name"] != "Planner"]

    def stop() -> None:
        launcher.stop(port)
        if database is not None:
            database.stop()
            shutil.rmtree(database.pgdata.parent, ignore_errors=True)

    try:
        launcher.start(config, env)
        launcher.wait_until_healthy(port, timeout_s=600)
    except BaseException:
        stop()
        raise
    return f"http://127.0.0.1:{port}", stop


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.timeflow_everyday", description=__doc__.splitlines()[0])
    parser.add_argument("--set", type=Path, default=HELD_OUT)
    parser.add_argument("--url", help="a running timeflow app whose clock is pinned at the set's `now`")
    parser.add_argument("--planner", choices=["vllm", "none"], help="the Planner deployment (default: the config's)")
    parser.add_argument("--label", default="", help="what this run measures (e.g. the code before the fix)")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "timeflow_everyday")
    parser.add_argument("--name", default="timeflow_everyday")
    args = parser.parse_args(argv)
    held_out = yaml.safe_load(args.set.read_text(encoding="utf-8"))
    started = time.perf_counter()
    url, stop = (args.url, None) if args.url else _serve(held_out, args.planner)
    try:
        cases = run_set(url, held_out)
    finally:
        if stop is not None:
            stop()
    result = {
        "benchmark": "TimeFlow everyday requests (held out) over HTTP",
        "name": args.name,
        "label": args.label,
        "set": str(args.set.relative_to(ROOT)) if args.set.is_relative_to(ROOT) else str(args.set),
        "now": held_out["now"],
        "figures": summarize([c["score"] for c in cases]),
        "cases": cases,
        "degraded_cases": sum(1 for c in cases if c["degraded"]),
        "wall_s": round(time.perf_counter() - started, 1),
        "planner": args.planner or "config",
        **provenance(),
    }
    print(write(args.out, args.name, result, markdown, figure))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
