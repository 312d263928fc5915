"""The app state: everything the routes and the WebSocket need, built once per replica by `build_state` and never
changed after (the readiness flag inside it is set by the warm-up; the objects inside keep their own state).

The served app builds it in the Orchestrator's constructor from the model deployments' handles; an app served by a
plain ASGI server (the monolith baseline, in-process tests) builds it in its lifespan, since the PostgreSQL pool
belongs to the server's event loop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from zoneinfo import ZoneInfo

from fastapi import FastAPI
from pydantic import SecretStr

from config.settings import Settings
from deployments.faults import StageFaults
from engine.agents.long_task_split import LongTaskSplitAgent
from engine.agents.registry import AgentRegistry
from engine.clock import Clock, app_clock
from engine.conversation.perception import Perception
from engine.llm.hooks import build_chain
from engine.llm.lm import RoutedLanguageModel
from engine.llm.plan_outcome import LOCAL
from engine.llm.planner import LlmWorkflowPlanner
from engine.media import MediaClient
from engine.model_client import ModelClient
from engine.pack import Pack, find_pack, load_pack
from engine.plugins import PluginRegistry
from engine.session import InMemorySessionStore
from engine.turn import TurnEngine
from media.store import build_store
from media.uploads import MediaUploads
from serve_app.agents.agent import ConversationAgent
from serve_app.agents.http_turns import AgentChat
from serve_app.auth import Auth, Callers, signing_secret
from serve_app.calendar_sync import CalendarSync
from serve_app.http.openai.serving import OpenAiServing
from serve_app.http.ratelimit import RateLimits
from serve_app.llm_backends.registry import LlmBackends
from serve_app.metrics import LlmMetrics, TurnMetrics
from serve_app.readiness import Readiness
from serve_app.turns.admission import Admission
from serve_app.turns.runner import TurnRunner
from serve_app.turns.stored import StoredChat
from serve_app.ws.bounds import UserConnections
from store.database import Database


@dataclass(frozen=True)
class ModelClients:
    """How this replica reaches the models: the text models (`nlu`), ASR and OCR (`media`), the language model (`llm`,
    routes counted apart); Serve handles in the served app, in-process models in the monolith and the tests."""

    nlu: ModelClient
    media: MediaClient | None = None
    llm: RoutedLanguageModel | None = None


@dataclass(frozen=True)
class Persistence:
    """The store-backed parts: the pool, the accounts, and chat turns over leased sessions."""

    db: Database
    callers: Callers
    chat: StoredChat

    @property
    def auth(self) -> Auth:
        return self.callers.auth


@dataclass(frozen=True)
class AppState:
    settings: Settings
    engine: TurnEngine
    turns: TurnRunner
    metrics: TurnMetrics
    readiness: Readiness
    openai: OpenAiServing
    limits: RateLimits
    store: Persistence | None = None
    uploads: MediaUploads | None = None
    conversation: ConversationAgent | None = None  # the main agent (WebSocket and HTTP); needs the store
    agent_chat: AgentChat | None = None  # HTTP chat over the main agent, on a pack whose intents name agents
    llm_planner: LlmWorkflowPlanner | None = None
    llm_metrics: LlmMetrics = field(default_factory=LlmMetrics)
    ws_connections: UserConnections = field(default_factory=UserConnections)  # per user, on this replica
    calendars: CalendarSync | None = None  # background CalDAV sync; needs the store
    assistants: dict[str, str] = field(default_factory=dict)  # the cluster's packs → route prefixes (AppArgs)

    @property
    def admission(self) -> Admission:
        return self.turns.admission

    @property
    def retry_after_s(self) -> int:
        return self.settings.serving.retry_after_s


def build_engine(
    settings: Settings,
    models: ModelClients,
    pack: Pack,
    clock: Clock,
    *,
    planners: list[LlmWorkflowPlanner] | None = None,
    backends: LlmBackends | None = None,
) -> TurnEngine:
    """The turn engine over `pack`: `planners` escalate in order after the local planners, `backends` write the
    generated replies (llm.use). The hooks chain is built here whether or not an LLM is deployed, so a hook config
    that names an unknown hook stops the start, naming it."""
    build_chain(settings.hooks)
    backends = backends or LlmBackends(settings, models.llm)
    return TurnEngine(
        pack=pack,
        settings=settings,
        models=models.nlu,
        sessions=InMemorySessionStore(settings.session.ttl_s),
        plugins=PluginRegistry(),
        media=models.media,
        faults=StageFaults(settings.env.faults, settings.env.faults_file),
        llm_planner=planners or None,
        replies=backends.replies(),
        clock=clock,
    )


def build_state(
    settings: Settings,
    models: ModelClients,
    db: Database | None,
    *,
    engine: TurnEngine | None = None,
    readiness: Readiness | None = None,
    uploads: MediaUploads | None = None,
    auth: Auth | None = None,
    admission: Admission | None = None,
    metrics: TurnMetrics | None = None,
    llm_metrics: LlmMetrics | None = None,
    assistants: dict[str, str] | None = None,
) -> AppState:
    """The app state over `settings` and `models`, with the store when `db` is given (else sessions stay in-process).

    The keyword arguments replace a part that is otherwise built from the settings (a test's engine, a media store of
    its own); `readiness` defaults to ready, since only a replica with a warm-up to run starts not ready."""
    planner = None
    clock = app_clock(ZoneInfo(settings.timezone), settings.testing.now)
    llm_metrics = llm_metrics or LlmMetrics()
    backends = LlmBackends(settings, models.llm, metrics=llm_metrics)  # no connection is opened before a call
    if engine is None:
        pack_dir = find_pack(settings.pack, shipped_dir=settings.packs_dir, state_dir=settings.state_dir)
        pack = load_pack(pack_dir)
        planners = backends.planners(pack_dir, pack)
        # the in-cluster planner is warmed up before the replica is ready; an endpoint elsewhere is not ours to wait on
        planner = next((p for p in planners if p.backend == LOCAL), None)
        engine = build_engine(settings, models, pack, clock, planners=planners, backends=backends)
    metrics = metrics or TurnMetrics(multiproc_dir=str(settings.env.metrics_dir) if settings.env.metrics_dir else None)
    readiness = readiness or Readiness()
    store = None
    if db is not None:
        auth = auth or Auth(
            settings.auth, signing_secret(settings.auth, settings.state_dir, _revealed(settings.env.auth_secret))
        )
        store = Persistence(
            db=db,
            callers=Callers(auth=auth, db=db, require_token=settings.auth.require_token),
            chat=StoredChat(engine, db, settings),
        )
    turns = TurnRunner(
        engine=engine,
        admission=admission or Admission(settings.serving.admission),
        metrics=metrics,
        readiness=readiness,
        stored=store.chat if store else None,
        callers=store.callers if store else None,
    )
    conversation = conversation_agent(settings, turns, store, backends, clock) if store else None
    agent_chat = None
    if store is not None and conversation is not None and any(i.agent for i in engine.pack.intents):
        agent_chat = AgentChat(conversation, store.callers)
    return AppState(
        settings=settings,
        engine=engine,
        turns=turns,
        metrics=metrics,
        readiness=readiness,
        openai=OpenAiServing(models.llm.for_route("openai") if models.llm else None, settings.llm),
        limits=RateLimits(settings.rate_limits),
        store=store,
        uploads=uploads or MediaUploads(store=build_store(settings), cfg=settings.media),
        conversation=conversation,
        agent_chat=agent_chat,
        llm_planner=planner,
        llm_metrics=llm_metrics,
        calendars=CalendarSync(db, settings) if db is not None else None,
        assistants=assistants or {},
    )


def conversation_agent(
    settings: Settings, turns: TurnRunner, store: Persistence, backends: LlmBackends, clock: Clock
) -> ConversationAgent:
    """The WebSocket main agent: the five sub-agents (their summaries by the first `llm.use.summariser` backend),
    perception over the long-task split agent's questions."""
    writer = backends.summariser()
    agents = AgentRegistry.default(writer, backends.scheduling())
    split = agents.definition("long_task_split_agent", "split")
    split_agent = agents.agent("long_task_split_agent")
    assert isinstance(split_agent, LongTaskSplitAgent)  # its questions, prefill and answers drive perception
    perception = Perception(
        settings.conversation, split_agent, (list(split.required_fields), list(split.optional_fields))
    )
    return ConversationAgent(
        settings=settings, turns=turns, db=store.db, agents=agents, perception=perception, clock=clock
    )


def _revealed(secret: SecretStr | None) -> str | None:
    return secret.get_secret_value() if secret is not None else None


def attach(api: FastAPI, state: AppState) -> FastAPI:
    api.state.baton = state
    return api


def state_of(app: FastAPI) -> AppState:
    """The app's state (a plain ASGI app's lifespan, or the Orchestrator, attached it before any request)."""
    state: AppState = app.state.baton
    return state


def on_start(api: FastAPI, build: Callable[[Database], AppState], dsn: str, settings: Settings) -> None:
    """For an app run by a plain ASGI server: on start, open the pool on `dsn` and attach `build(db)`; on stop, close
    the pool."""

    @asynccontextmanager
    async def with_store(app: FastAPI) -> AsyncIterator[None]:
        db = await Database.open(dsn, settings.database)
        state = build(db)
        attach(app, state)
        if state.calendars is not None:
            state.calendars.start()
        try:
            yield
        finally:
            if state.calendars is not None:
                await state.calendars.stop()
            await db.close()

    api.router.lifespan_context = with_store
