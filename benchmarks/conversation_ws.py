"""`python -m benchmarks.conversation_ws`: the WebSocket conversation under load against the same turn over HTTP.

Starts Baton with the timeflow pack (on a throwaway embedded PostgreSQL unless DATABASE_URL is set) and, in one
run: an idle phase alternating the same sentence as an HTTP chat turn (perception only) and as a WebSocket
`dialogue.input` (perception + execution + the write request), then closed loops of N concurrent connections, each
its own user, repeating one conversation — create a schedule, confirm it, ask what is planned. Per event type it
records the time from the frame being sent to the event arriving; turns/s counts frames answered. Writes JSON,
markdown and a figure under benchmarks/results/conversation_ws/.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import tempfile
import time
import uuid
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import httpx
from websockets.asyncio.client import connect

from benchmarks.conversation_ws_report import figure, markdown
from benchmarks.outputs import provenance, write
from benchmarks.stats import distribution

ROOT = Path(__file__).resolve().parent.parent
TZ = ZoneInfo("Asia/Shanghai")
ENDS_TURN = {
    "dialogue.clarification",
    "selection.required",
    "write.confirmation_required",
    "write.applied",
    "execution.result",
    "dialogue.error",
    "execution.error",
}
TITLES = ["开会", "交周报", "去健身", "给妈妈打电话", "取快递", "看牙医", "跑步", "买菜", "复习英语", "写日记"]
HOURS = ["上午九点", "上午十点", "中午十二点", "下午两点", "下午三点", "下午四点", "晚上七点", "晚上八点"]


def _frame(type_: str, payload: dict) -> str:
    return json.dumps(
        {"type": type_, "timestamp": datetime.now(TZ).isoformat(), "payload": payload}, ensure_ascii=False
    )


class Client:
    """One connection; `turn()` sends a frame and times each event up to the one that ends the turn."""

    def __init__(self, ws, samples: dict[str, list[float]]) -> None:
        self.ws = ws
        self.samples = samples
        self.sheds = 0

    async def turn(self, type_: str, payload: dict, *, record: bool = True) -> list[dict]:
        t0 = time.perf_counter()
        await self.ws.send(_frame(type_, payload))
        events = []
        while True:
            event = json.loads(await self.ws.recv())
            if record:
                self.samples.setdefault(event["type"], []).append((time.perf_counter() - t0) * 1000)
            events.append(event)
            if event["type"] in ENDS_TURN:
                return events

    async def retried(self, type_: str, payload: dict, *, record: bool) -> list[dict]:
        """`turn()`, sent again after `retry_after_s` while the server sheds it (a well-behaved client)."""
        while True:
            events = await self.turn(type_, payload, record=record)
            retry = events[-1]["payload"].get("retry_after_s") if events[-1]["type"].endswith(".error") else None
            if retry is None:
                return events
            self.sheds += 1
            await asyncio.sleep(retry)

    async def conversation(self, n: int, *, record: bool = True) -> int:
        """One create -> confirm -> query round; returns the frames answered."""
        said = f"明天{HOURS[n % len(HOURS)]}提醒我{TITLES[n % len(TITLES)]}"
        events = await self.retried(
            "dialogue.input", {"client_message_id": uuid.uuid4().hex, "raw_content": said}, record=record
        )
        if events[-1]["type"] != "write.confirmation_required":
            raise RuntimeError(f"{said!r} ended with {events[-1]}")
        confirm = events[-1]["payload"]
        applied = await self.retried(
            "write.decide",
            {
                "write_request_id": confirm["write_request_id"],
                "decision": "confirmed",
                "idempotency_key": uuid.uuid4().hex,
                "payload_hash": confirm["payload_hash"],
            },
            record=record,
        )
        if applied[-1]["type"] != "write.applied":
            raise RuntimeError(f"decide ended with {applied[-1]}")
        await self.retried(
            "dialogue.input", {"client_message_id": uuid.uuid4().hex, "raw_content": "明天有什么安排"}, record=record
        )
        return 3


async def _user(http: httpx.AsyncClient) -> tuple[str, str]:
    """A new account: (access token, user id)."""
    reg = await http.post(
        "/api/v1/auth/register",
        json={"email": f"ws-{uuid.uuid4().hex[:10]}@example.com", "password": "benchmark-password"},
    )
    reg.raise_for_status()
    return reg.json()["access_token"], reg.json()["user_id"]


def _ws_url(url: str, token: str) -> str:
    return url.replace("http://", "ws://") + f"/ws/v1/conversation?access_token={token}"


async def idle(url: str, rounds: int) -> dict:
    """The same sentence, alternately over HTTP chat and as a WebSocket input, one at a time."""
    http_ms: list[float] = []
    ws: dict[str, list[float]] = {}
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        token, user_id = await _user(http)
        headers = {"Authorization": f"Bearer {token}"}
        async with connect(_ws_url(url, token)) as socket:
            client = Client(socket, ws)
            for i in range(rounds + 3):
                said = f"后天{HOURS[i % len(HOURS)]}提醒我{TITLES[i % len(TITLES)]}"
                t0 = time.perf_counter()
                resp = await http.post("/api/v1/agent/chat", headers=headers, json={"user_id": user_id, "text": said})
                wall = (time.perf_counter() - t0) * 1000
                if resp.status_code != 200:
                    raise RuntimeError(resp.text)
                if i >= 3:
                    http_ms.append(wall)
                await client.turn(
                    "dialogue.input", {"client_message_id": uuid.uuid4().hex, "raw_content": said}, record=i >= 3
                )
                await asyncio.sleep(0.05)
    return {"http_chat_ms": distribution(http_ms), "ws_events_ms": {k: distribution(v) for k, v in ws.items()}}


async def closed_loop(url: str, connections: int, duration_s: float, warmup_s: float) -> dict:
    samples: dict[str, list[float]] = {}
    answered = 0
    sheds = 0
    errors: list[str] = []
    async with httpx.AsyncClient(base_url=url, timeout=30) as http:
        tokens = [(await _user(http))[0] for _ in range(connections)]
    start = time.perf_counter()
    measure_from, stop_at = start + warmup_s, start + warmup_s + duration_s

    async def one(token: str, offset: int) -> None:
        nonlocal answered, sheds
        async with connect(_ws_url(url, token)) as socket:
            client = Client(socket, samples)
            n = offset
            while time.perf_counter() < stop_at:
                recording = time.perf_counter() >= measure_from
                try:
                    frames = await client.conversation(n, record=recording)
                except RuntimeError as exc:
                    errors.append(str(exc)[:200])
                    continue
                finally:
                    sheds, client.sheds = sheds + (client.sheds if recording else 0), 0
                if recording and time.perf_counter() <= stop_at:
                    answered += frames
                n += 1

    await asyncio.gather(*(one(t, i * 7) for i, t in enumerate(tokens)))
    return {
        "connections": connections,
        "frames_per_s": round(answered / duration_s, 2),
        "frames": answered,
        "shed": sheds,
        "errors": len(errors),
        "error_examples": errors[:3],
        "events_ms": {k: distribution(v) for k, v in samples.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.conversation_ws", description=__doc__.splitlines()[0])
    parser.add_argument("--idle-rounds", type=int, default=60)
    parser.add_argument("--levels", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--duration-s", type=float, default=30)
    parser.add_argument("--warmup-s", type=float, default=5)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "conversation_ws")
    args = parser.parse_args(argv)

    from config.settings import load_settings
    from serve_app.ops import launcher
    from store.embedded import EmbeddedPostgres

    [port] = launcher.free_ports(1)
    env = {**os.environ, "BATON_PACK": "timeflow"}
    database = None
    if not env.get("DATABASE_URL"):
        database = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="baton-bench-pg-")) / "pgdata")
        env["DATABASE_URL"] = database.start()
    config = launcher.load_serve_config(ROOT / "config" / "serve_local.yaml", env, port=port)
    url = f"http://127.0.0.1:{port}"
    launcher.start(config, env)
    try:
        launcher.wait_until_healthy(port, timeout_s=300)
        idle_r = asyncio.run(idle(url, args.idle_rounds))
        loops = [asyncio.run(closed_loop(url, n, args.duration_s, args.warmup_s)) for n in args.levels]
    finally:
        launcher.stop(port)
        if database is not None:
            database.stop()
            shutil.rmtree(database.pgdata.parent, ignore_errors=True)
    http_p50 = idle_r["http_chat_ms"]["p50"]
    result = {
        "benchmark": "WebSocket conversation: idle against HTTP chat, closed loops of concurrent connections",
        "idle": idle_r,
        "closed_loop": loops,
        "ratios": {
            "ws_decision_over_http_p50": round(idle_r["ws_events_ms"]["dialogue.decision"]["p50"] / http_p50, 3),
            "ws_confirmation_over_http_p50": round(
                idle_r["ws_events_ms"]["write.confirmation_required"]["p50"] / http_p50, 3
            ),
        },
        "budget_ms": load_settings(ROOT / "config", env).budgets.turn_ms["text"],
        "database": "external DATABASE_URL" if database is None else "embedded PostgreSQL 18 (Unix socket), fresh",
        **provenance(),
        "settings": {
            "idle_rounds": args.idle_rounds,
            "levels": args.levels,
            "duration_s": args.duration_s,
            "warmup_s": args.warmup_s,
        },
    }
    print(write(args.out, "conversation_ws", result, markdown, figure))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
