"""A tiny OpenAI-wire server on 127.0.0.1 (aiohttp): `/v1/chat/completions` answering what a test scripts — a body, a
status, a delay, malformed bytes, a stream — and recording what it saw: each request's body and headers, and each
connection the client closed before the answer was sent. A test double for the code around the client (deadlines,
cancellation, concurrency, fallbacks); the real OpenAI server under test is vLLM's (tests/llm_backends)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Script:
    """What the next answers are: `text` as the assistant's content after `delay` s, or `status` with an error body,
    or `raw` bytes as a 200 body; `stream` sends `text` as one SSE chunk per character, `delay` s apart."""

    text: str = '{"steps":[]}'
    delay: float = 0.0
    status: int = 200
    raw: bytes | None = None
    stream_delay: float = 0.0


@dataclass
class OpenAiWire:
    script: Script = field(default_factory=Script)
    then: list[Script] = field(default_factory=list)  # the next requests' answers in order, before `script`'s
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    closed_early: int = 0  # connections the client closed before the answer was complete
    in_flight: int = 0
    most_in_flight: int = 0
    key: str | None = None  # when set, any other bearer token is answered 401
    base_url: str = ""
    _runner: web.AppRunner | None = None
    closed: asyncio.Event = field(default_factory=asyncio.Event)

    async def start(self) -> OpenAiWire:
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._complete)
        # a client that goes away cancels its handler: that is how the test sees the connection closed
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        return self

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    async def _complete(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        self.requests.append(body)
        self.headers.append({k.lower(): v for k, v in request.headers.items()})
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        script = self.then.pop(0) if self.then else self.script
        try:
            if self.key is not None and request.headers.get("Authorization") != f"Bearer {self.key}":
                return web.json_response(
                    {"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}}, status=401
                )
            await asyncio.sleep(script.delay)
            if script.status != 200:
                failed = {"error": {"message": "upstream failed", "type": "server_error"}}
                return web.json_response(failed, status=script.status)
            if script.raw is not None:
                return web.Response(body=script.raw, content_type="application/json")
            if body.get("stream"):
                return await self._stream(request, body, script)
            return web.json_response(completion(body, script.text))
        except asyncio.CancelledError:
            self.closed_early += 1
            self.closed.set()
            raise
        finally:
            self.in_flight -= 1

    async def _stream(self, request: web.Request, body: dict[str, Any], script: Script) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for ch in script.text:
            chunk = {
                "id": "c1",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": body["model"],
                "choices": [{"index": 0, "delta": {"content": ch}, "finish_reason": None}],
            }
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
            await asyncio.sleep(script.stream_delay)
        n = len(script.text)
        end = {
            "id": "c1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": body["model"],
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 5, "completion_tokens": n, "total_tokens": 5 + n},
        }
        await response.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
        await response.write_eof()
        return response


def completion(body: dict[str, Any], text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", ""),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }
