"""The WebSocket's progress notices: a reply an LLM backend writes reaches the client clause by clause as
`execution.delta` frames (each only once it passed the checks) before the turn's outcome, whose reply starts with the
deltas joined. The engine runs in process (fake NLU models) with the WebSocket's listener; the social backend is the
real client over a loopback OpenAI-wire server that streams."""

from __future__ import annotations

import uuid

from pydantic import SecretStr

from config.llm import LlmBackend
from engine.llm.responder import ReplyBackend, SocialResponder
from protocol.http_chat import ChatRequest
from protocol.ws import SERVER_PAYLOADS, DeltaPayload, WsEnvelope
from serve_app.agents.log import ProgressNotice
from serve_app.llm_backends.openai_lm import OpenAiLanguageModel
from tests.engine.test_cloud_layer import cloud_settings
from tests.support.fakes import FakeModelClient, Rig
from tests.support.openai_server import OpenAiWire, Script

SOURCE = uuid.uuid4()


async def turn_over_the_socket(script: Script) -> tuple[list[WsEnvelope], str]:
    sent: list[WsEnvelope] = []

    async def send(frame: WsEnvelope) -> None:
        sent.append(frame)

    wire = await OpenAiWire(script=script).start()
    try:
        lm = OpenAiLanguageModel("qwen", LlmBackend(base_url=wire.base_url, model="m"), SecretStr("k"))
        writer = SocialResponder([ReplyBackend("qwen", lm, timeout_s=5.0)], budget_s=0.3, extra_ms=2400.0)
        rig = Rig(models=FakeModelClient(), settings=cloud_settings(planner=[], social=["qwen"]), replies=writer)
        response = await rig.engine.chat(
            ChatRequest(user_id="u1", text="最近压力好大，睡不着"), listener=ProgressNotice(send, SOURCE)
        )
    finally:
        await wire.stop()
    return sent, response.reply


async def test_a_generated_reply_reaches_the_socket_as_delta_frames_that_the_final_reply_starts_with():
    sent, reply = await turn_over_the_socket(Script(text="听起来你最近很累，睡不着确实难受。先放下手机歇一会儿吧！"))
    assert [frame.type for frame in sent] == ["execution.delta"] * 3
    deltas = [SERVER_PAYLOADS[frame.type].model_validate(frame.payload) for frame in sent]
    assert all(isinstance(d, DeltaPayload) and d.source_message_id == SOURCE for d in deltas)
    assert [d.text for d in deltas] == ["听起来你最近很累，", "睡不着确实难受。", "先放下手机歇一会儿吧！"]
    assert reply == "".join(d.text for d in deltas)


async def test_a_clause_that_claims_an_action_is_never_sent_to_the_socket():
    sent, reply = await turn_over_the_socket(Script(text="别着急，我已经帮你把闹钟关掉了。好好睡。"))
    assert [DeltaPayload.model_validate(frame.payload).text for frame in sent] == ["别着急，"]
    assert reply == "别着急，" and "关掉" not in "".join(str(frame.payload) for frame in sent)


async def test_a_template_reply_sends_no_delta():
    sent, _ = await turn_over_the_socket(Script(text="已经帮你打开车窗了，放心吧。"))
    assert sent == []
