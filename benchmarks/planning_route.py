"""The planning benchmark's engine leg: each held-out request through the timeflow pack's turn engine with its built
models in-process (no Serve), then the route to the Scheduling chain. Says which requests would reach the chain in
the conversation and what the classifier said of each (the signal the chain's level may use)."""

from __future__ import annotations

import os
from datetime import datetime
from typing import Any

from engine.scheduling.route import routed


async def engine_turns(texts: list[str], now: datetime) -> dict[str, dict[str, Any]]:
    """text → {status, intent, agent, reached, signal}: the engine's turn on it (at `now`, aware) and whether the
    route hands it to `scheduling_agent`."""
    from benchmarks.outputs import ROOT
    from config.settings import load_settings
    from deployments.artifacts import served_settings
    from deployments.in_process import InProcessModels
    from deployments.nlu import build_nlu
    from engine.pack import find_pack, load_pack
    from engine.plugins import InMemoryWorlds, PluginRegistry
    from engine.session import InMemorySessionStore
    from engine.turn import TurnEngine
    from protocol.http_chat import ChatRequest

    settings = load_settings(ROOT / "config", {**os.environ, "BATON_PACK": "timeflow"})
    pack = load_pack(find_pack("timeflow", shipped_dir=settings.packs_dir, state_dir=settings.state_dir))
    models = InProcessModels(build_nlu(settings))
    engine = TurnEngine(
        pack=pack,
        settings=served_settings(settings),
        models=models,
        sessions=InMemorySessionStore(600),
        plugins=PluginRegistry(),
        worlds=InMemoryWorlds(),
        clock=lambda: now,
    )
    found: dict[str, dict[str, Any]] = {}
    try:
        for n, text in enumerate(texts):
            response = await engine.chat(ChatRequest(user_id=f"planning-{n}", text=text))
            decision = routed(response, text, now).decision
            found[text] = {
                "status": response.status.value,
                "intent": response.intent,
                "agent": response.decision.agent if response.decision else None,
                "reached": decision is not None and decision.agent == "scheduling_agent",
                "signal": dict(decision.params) if decision is not None else {},
            }
    finally:
        models.close()
    return found
