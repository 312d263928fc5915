"""The planner's history is the conversation log: after a 200-message session (100 turns over the real store) an
escalated turn's prompt carries the conversation compacted to its budget — the middle folded by the summariser
backend when there is one, extractively when not — and the last messages verbatim. The planner and the summariser
are cloud backends on loopback OpenAI-wire servers, so the test reads what each endpoint received."""

from __future__ import annotations

import json

from config.settings import load_settings
from engine.llm.compaction import SUMMARY_PREFIX
from protocol.http_chat import ChatRequest
from serve_app.state import ModelClients, build_state
from tests.engine.test_workflow_escalation import GOOD, UTTERANCE, models
from tests.support.fakes import CONFIG_DIR
from tests.support.openai_server import OpenAiWire, Script

TURNS = 100  # each logs what the user said and the reply: 200 messages


async def escalated_after_a_long_session(db, tmp_path, name: str, summariser: OpenAiWire | None) -> list[dict]:
    planner = await OpenAiWire(script=Script(text=json.dumps(GOOD))).start()
    try:
        backends = {"qwen": {"base_url": planner.base_url, "model": "p"}}
        use = {"planner": ["qwen"], "summariser": []}
        if summariser is not None:
            backends["sum"] = {"base_url": summariser.base_url, "model": "s", "generates": True}
            use["summariser"] = ["sum"]
        overrides = {
            "llm": {"backends": backends, "use": use},
            "budgets": {"turn_ms": {"llm": 3000}, "stages_ms": {"planner_llm": 2400}},
        }
        settings = load_settings(CONFIG_DIR, {}, overrides, state_dir=tmp_path)
        state = build_state(settings, ModelClients(nlu=models()), db)
        assert state.store is not None
        user = await state.store.callers.shadow_user(name)
        elsewhere = ChatRequest(user_id=name, session_id="another", text="另一个会话里说的悄悄话")
        await state.store.chat.chat(elsewhere, user.id, state.engine.deadline("text"))
        for i in range(TURNS):
            said = ChatRequest(user_id=name, session_id="long", text=f"第{i}次：今天路上有点堵，先随便聊聊天气和音乐吧")
            await state.store.chat.chat(said, user.id, state.engine.deadline("text"))
        async with db.connection() as conn:
            logged = await conn.fetchval("SELECT count(*) FROM conversation_messages WHERE user_id = $1", user.id)
        assert logged >= 2 * TURNS
        body = ChatRequest(user_id=name, session_id="long", text=UTTERANCE)
        response = await state.store.chat.chat(body, user.id, state.engine.deadline("text"))
        assert response.workflow is not None and response.workflow.planner == "llm:qwen"
        return planner.requests[-1]["messages"]  # the chit-chat before may have been asked about too
    finally:
        await planner.stop()


async def test_a_long_sessions_history_is_summarised_by_the_summariser_and_its_tail_kept(db, tmp_path):
    summariser = await OpenAiWire(script=Script(text="用户一路上在聊天气和音乐。")).start()
    try:
        messages = await escalated_after_a_long_session(db, tmp_path, "long-session", summariser)
    finally:
        await summariser.stop()
    assert summariser.requests, "compaction fired and asked the summariser backend"
    folded = [m for m in messages if m["role"] == "system" and m["content"].startswith(SUMMARY_PREFIX)]
    assert folded and "天气和音乐" in folded[0]["content"]
    assert messages[-1] == {"role": "user", "content": UTTERANCE} or UTTERANCE in messages[-1]["content"]
    said = [m["content"] for m in messages if m["role"] == "user"]
    assert any("第99次" in s for s in said), "the last messages are kept verbatim"
    assert not any("第0次" in s for s in said), "the oldest are folded into the summary"
    assert sum(len(m["content"]) for m in messages[1:]) <= 6000
    # (the system prompt may recall it: semantic memory is the user's, across sessions; the history is the session's)
    assert "悄悄话" not in json.dumps(messages[1:], ensure_ascii=False), "another session's dialog stays out"


async def test_without_a_summariser_the_middle_is_folded_extractively(db, tmp_path):
    messages = await escalated_after_a_long_session(db, tmp_path, "long-session-plain", None)
    folded = [m for m in messages if m["role"] == "system" and m["content"].startswith(SUMMARY_PREFIX)]
    assert folded and "用户说过" in folded[0]["content"]
    assert any("第99次" in m["content"] for m in messages if m["role"] == "user")
