"""DSPy over Baton's language model: `dspy.LM` with an engine that calls the engine's `LanguageModel` interface.

DSPy 3.4's way to plug a model in is an engine (`complete(Request) -> Response`, `stream(Request)`) given to
`dspy.LM(engine=..., async_engine=...)`; `dspy.LM` is the `BaseLM` the programs see. The engine here calls the
Planner deployment through `LanguageModel` (serve_app/llm_client.py: its Serve handle), never an HTTP api_base,
so the turn's deadline and cancellation reach vLLM: every call runs inside `lm_call(...)`, which names the
deadline, the stage whose budget bounds it, the JSON schema its output must follow (vLLM structured outputs) and
its scheduling priority. A call outside `lm_call` is refused: no model call without a deadline.

The models are async (Serve handles): programs are called with `acall`; the sync engine refuses.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.deadline import Deadline, StageTimeout
from engine.llm.lm import (
    PRIORITY_INTERACTIVE,
    LanguageModel,
    LmReply,
    LmRequest,
    abort_quietly,
    complete_within,
    new_request_id,
)

if TYPE_CHECKING:
    import dspy
    from dspy.lm15 import Request, Response

MODEL_NAME = "baton/planner"
_FINISH = {"stop": "stop", "length": "length"}  # anything else (abort) ends the stream as an error


@dataclass(frozen=True)
class LmCall:
    """What bounds one program's model calls: the turn's `deadline`, the `stage` timed and its `budget_s`
    (min(budget, time left) per call), the `schema` the output must follow, and the vLLM `priority`."""

    deadline: Deadline
    stage: str
    budget_s: float
    schema: dict[str, Any] | None = None
    priority: int = PRIORITY_INTERACTIVE


_CALL: ContextVar[LmCall | None] = ContextVar("baton_lm_call", default=None)


@contextmanager
def lm_call(call: LmCall) -> Iterator[None]:
    token = _CALL.set(call)
    try:
        yield
    finally:
        _CALL.reset(token)


def current_call() -> LmCall:
    call = _CALL.get()
    if call is None:
        raise RuntimeError("a DSPy program called the language model outside lm_call(): no deadline to bound it")
    return call


class _SyncRefused:
    """dspy.LM needs a sync engine too; Baton's model is reached through async handles only."""

    def complete(self, request: Request) -> Response:
        raise TypeError("Baton's language model is asynchronous: call the program with `await program.acall(...)`")

    def stream(self, request: Request) -> Iterator[Any]:
        raise TypeError("Baton's language model is asynchronous: use dspy.streamify with an async program")

    def close(self) -> None:
        pass


class LanguageModelEngine:
    """The async lm15 engine over `LanguageModel`; `max_tokens` when a request names none."""

    def __init__(self, lm: LanguageModel, *, max_tokens: int) -> None:
        self._lm, self._max_tokens = lm, max_tokens

    def _request(self, request: Request) -> LmRequest:
        call = current_call()
        messages = []
        if request.system is not None:
            system = request.system if isinstance(request.system, str) else "".join(p.text for p in request.system)
            messages.append({"role": "system", "content": system})
        messages += [{"role": m.role, "content": m.text or ""} for m in request.messages]
        return LmRequest(
            messages=messages,
            json_schema=call.schema,
            max_tokens=request.config.max_tokens or self._max_tokens,
            temperature=request.config.temperature or 0.0,
            request_id=new_request_id("dspy"),
            priority=call.priority,
        )

    async def complete(self, request: Request) -> Response:
        call = current_call()
        lm_request = self._request(request)
        reply = await complete_within(
            self._lm, lm_request, deadline=call.deadline, stage=call.stage, budget_s=call.budget_s
        )
        return _response(lm_request.request_id, reply)

    async def stream(self, request: Request) -> AsyncIterator[Any]:
        """Deltas as the model decodes them (the model's own stream when it has one), inside the call's budget;
        past it the model's stream is closed, which aborts the request in the engine."""
        from dspy.lm15 import StreamDeltaEvent, StreamEndEvent, StreamStartEvent, TextDelta, Usage

        call = current_call()
        lm_request = self._request(request)
        if not hasattr(self._lm, "stream"):
            from dspy.lm15 import response_to_events

            for event in response_to_events(await self.complete(request)):
                yield event
            return
        yield StreamStartEvent(id=lm_request.request_id, model=MODEL_NAME)
        last: dict[str, Any] = {}
        deltas = self._lm.stream(lm_request)
        try:
            async with call.deadline.phase(call.stage, call.budget_s):
                async for delta in deltas:
                    last = delta
                    if delta["text"]:
                        yield StreamDeltaEvent(delta=TextDelta(text=delta["text"], part_index=0))
        except StageTimeout:
            await abort_quietly(self._lm, lm_request.request_id)
            raise
        finally:
            await deltas.aclose()
        yield StreamEndEvent(
            finish_reason=_FINISH.get(last.get("finish_reason", ""), "error"),
            usage=Usage(input_tokens=last.get("prompt_tokens", 0), output_tokens=last.get("completion_tokens", 0)),
        )

    async def aclose(self) -> None:
        pass


def _response(request_id: str, reply: LmReply) -> Response:
    from dspy.lm15 import Message, Response, TextPart, Usage

    return Response(
        id=request_id,
        model=MODEL_NAME,
        message=Message.assistant([TextPart(reply.text)]),
        finish_reason=_FINISH.get(reply.finish_reason, "error"),
        usage=Usage(input_tokens=reply.prompt_tokens, output_tokens=reply.completion_tokens),
    )


def dspy_lm(lm: LanguageModel, *, max_tokens: int) -> dspy.LM:
    """`dspy.LM` over `lm` (no cache: every call reaches the engine; temperature 0 by default)."""
    # litellm (under dspy) fetches a model cost map at import unless LITELLM_LOCAL_MODEL_COST_MAP is set: the
    # Serve configs' runtime_env and the Makefile set it
    import dspy

    return dspy.LM(
        MODEL_NAME,
        engine=_SyncRefused(),
        async_engine=LanguageModelEngine(lm, max_tokens=max_tokens),
        cache=False,
        temperature=0.0,
        max_tokens=max_tokens,
        num_retries=0,
    )
