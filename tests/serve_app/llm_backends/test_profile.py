"""The user's profile reaches the planner's prompt (PROFILE.md): read from the real store inside the turn, rendered
as reference data; a user without one gets the prompt's "no profile" line. The planner here is a cloud backend on a
loopback OpenAI-wire server, so the test reads the prompt as the endpoint received it."""

from __future__ import annotations

import json

from config.settings import load_settings
from protocol.http_chat import ChatRequest
from serve_app.state import ModelClients, build_state
from tests.engine.test_workflow_escalation import GOOD, UTTERANCE, models
from tests.support.fakes import CONFIG_DIR
from tests.support.openai_server import OpenAiWire, Script


async def test_the_users_profile_reaches_the_planners_prompt(db, tmp_path):
    wire = await OpenAiWire(script=Script(text=json.dumps(GOOD))).start()
    try:
        overrides = {
            "llm": {"backends": {"qwen": {"base_url": wire.base_url, "model": "m"}}, "use": {"planner": ["qwen"]}},
            "budgets": {"turn_ms": {"llm": 3000}, "stages_ms": {"planner_llm": 2400}},
        }
        settings = load_settings(CONFIG_DIR, {}, overrides, state_dir=tmp_path)
        state = build_state(settings, ModelClients(nlu=models()), db)
        assert state.store is not None
        with_profile = await state.store.callers.shadow_user("profiled")
        async with db.connection() as conn:
            await conn.execute(
                "INSERT INTO user_profiles (user_id, profile_data) VALUES ($1, $2)",
                with_profile.id,
                {"称呼": "小王", "作息": "早起"},
            )
        without = await state.store.callers.shadow_user("new-user")
        for user, name, session in ((with_profile, "profiled", "s-profile"), (without, "new-user", "s-none")):
            body = ChatRequest(user_id=name, session_id=session, text=UTTERANCE)
            response = await state.store.chat.chat(body, user.id, state.engine.deadline("text"))
            assert response.workflow is not None and response.workflow.planner == "llm:qwen"
        profiled, fresh = (r["messages"][0]["content"] for r in wire.requests)
        assert "- 称呼：小王" in profiled and "- 作息：早起" in profiled and "暂无用户档案" not in profiled
        assert "暂无用户档案" in fresh and "小王" not in fresh
    finally:
        await wire.stop()
