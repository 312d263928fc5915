"""The LanguageModel over the Planner's handle, with a stand-in handle (no Ray): requests as plain dicts, a cancelled
call cancels its DeploymentResponse (the replica then aborts the request in vLLM), abort by id, and the metrics
(TTFT, TPOT, end to end, tokens, aborts) in vLLM's vocabulary."""

from __future__ import annotations

import asyncio

import pytest

from engine.llm.lm import LmRequest
from serve_app.metrics import LlmMetrics
from serve_app.replicas.llm_client import HandleLanguageModel


class Response:
    """A DeploymentResponse: awaitable (or async-iterable when streaming), cancellable."""

    def __init__(self, answer, delay: float) -> None:
        self.answer, self.delay, self.cancelled = answer, delay, False

    def __await__(self):
        return self._wait().__await__()

    async def _wait(self):
        await asyncio.sleep(self.delay)
        return self.answer

    def __aiter__(self):
        return self._stream()

    async def _stream(self):
        for delta in self.answer:
            await asyncio.sleep(self.delay)
            yield delta

    def cancel(self) -> None:
        self.cancelled = True


class Method:
    def __init__(self, handle, name):
        self.handle, self.name = handle, name

    def remote(self, request):
        self.handle.sent.append((self.name, request))
        response = Response(self.handle.answers[self.name], self.handle.delay)
        self.handle.responses.append(response)
        return response


class Handle:
    def __init__(self, *, delay: float = 0.0) -> None:
        self.delay, self.sent, self.responses = delay, [], []
        self.answers = {
            "complete": {
                "text": '{"ok":true}',
                "finish_reason": "stop",
                "prompt_tokens": 40,
                "completion_tokens": 11,
                "ttft_ms": 100.0,
                "e2e_ms": 600.0,
            },
            "stream": [
                {"text": "你", "finish_reason": None, "prompt_tokens": 4, "completion_tokens": 1},
                {
                    "text": "好",
                    "finish_reason": "stop",
                    "prompt_tokens": 4,
                    "completion_tokens": 2,
                    "ttft_ms": 20.0,
                    "e2e_ms": 40.0,
                },
            ],
        }

    def options(self, **_):
        return self

    def __getattr__(self, name):
        return Method(self, name)


def request(request_id: str = "llm-1") -> LmRequest:
    return LmRequest(
        messages=[{"role": "user", "content": "开窗"}],
        json_schema={"type": "object"},
        max_tokens=32,
        temperature=0.0,
        request_id=request_id,
        priority=0,
    )


def value(metrics: LlmMetrics, name: str, **labels) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


async def test_a_completion_goes_as_a_dict_and_its_timings_are_measured():
    handle, metrics = Handle(), LlmMetrics()
    reply = await HandleLanguageModel(handle, metrics).complete(request())
    assert reply.text == '{"ok":true}' and reply.finish_reason == "stop" and reply.ttft_ms == 100.0
    name, sent = handle.sent[0]
    assert name == "complete" and sent == {
        "messages": [{"role": "user", "content": "开窗"}],
        "json_schema": {"type": "object"},
        "max_tokens": 32,
        "temperature": 0.0,
        "request_id": "llm-1",
        "priority": 0,
    }
    assert value(metrics, "baton_llm_ttft_ms_sum", route="planner") == 100.0
    assert value(metrics, "baton_llm_tpot_ms_sum", route="planner") == pytest.approx((600.0 - 100.0) / 10)
    assert value(metrics, "baton_llm_e2e_ms_sum", route="planner") == 600.0
    assert value(metrics, "baton_llm_tokens_total", route="planner", kind="completion") == 11
    assert value(metrics, "baton_llm_requests_total", route="planner", finish_reason="stop") == 1


async def test_a_call_given_up_on_cancels_its_response_and_counts_an_abort():
    handle, metrics = Handle(delay=5.0), LlmMetrics()
    lm = HandleLanguageModel(handle, metrics).for_route("openai")
    task = asyncio.ensure_future(lm.complete(request()))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert handle.responses[0].cancelled
    assert value(metrics, "baton_llm_aborts_total", route="openai") == 1


async def test_abort_by_id_cancels_the_call_in_flight_and_is_a_no_op_after():
    handle = Handle(delay=5.0)
    lm = HandleLanguageModel(handle)
    task = asyncio.ensure_future(lm.complete(request("llm-7")))
    await asyncio.sleep(0.05)
    await lm.abort("llm-7")
    assert handle.responses[0].cancelled
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await lm.abort("llm-7")  # gone: nothing to cancel, no error
    await lm.abort("never-sent")


async def test_a_stream_yields_the_deltas_and_a_stream_left_early_is_cancelled():
    handle, metrics = Handle(), LlmMetrics()
    lm = HandleLanguageModel(handle, metrics)
    assert [d["text"] async for d in lm.stream(request())] == ["你", "好"]
    assert value(metrics, "baton_llm_requests_total", route="planner", finish_reason="stop") == 1
    stream = lm.stream(request("llm-2"))
    await stream.__anext__()
    await stream.aclose()
    assert handle.responses[-1].cancelled and value(metrics, "baton_llm_aborts_total", route="planner") == 1
