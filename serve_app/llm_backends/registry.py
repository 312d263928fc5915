"""This replica's LLM backends by name — `local` (the in-cluster Planner, when the app deploys one) and each
`llm.backends` endpoint — and the engine's parts built over the chain `llm.use` names for each purpose."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from config.llm import LOCAL, Purpose
from config.settings import Settings
from engine.llm.compaction import lm_summarizer
from engine.llm.dspy_engine import dspy_lm
from engine.llm.lm import RoutedLanguageModel
from engine.llm.planner import LlmWorkflowPlanner
from engine.llm.prompts import PromptSet
from engine.llm.replies import LlmTextWriter, Replies, ReplyWriter
from engine.llm.responder import TEMPERATURE, ReplyBackend, SocialResponder
from engine.llm.scheduling_texts import ProgramTexts
from engine.pack import Pack
from engine.scheduling import SchedulingChain
from serve_app.llm_backends.openai_lm import OpenAiLanguageModel
from serve_app.metrics import LlmMetrics

ROUTES: dict[Purpose, str] = {"planner": "planner", "social": "reply", "programs": "programs", "summariser": "summary"}


class LlmBackends:
    """The backends of `settings.llm`, each built once per replica (one SDK client and one concurrency bound per
    endpoint, whatever purposes share it); the keys come from `settings.env.llm_keys`, read by the config loader."""

    def __init__(
        self,
        settings: Settings,
        local: RoutedLanguageModel | None,
        *,
        metrics: LlmMetrics | None = None,
        remote: Mapping[str, OpenAiLanguageModel] | None = None,
    ) -> None:
        """`local`: the Planner deployment's model, None when the app deploys none; `remote`: the endpoints' models
        (built from the settings when None)."""
        self._settings, self._local = settings, local
        self.remote = (
            dict(remote)
            if remote is not None
            else {
                name: OpenAiLanguageModel(name, backend, settings.env.llm_keys.get(name), metrics=metrics)
                for name, backend in settings.llm.backends.items()
            }
        )

    def chain(self, purpose: Purpose) -> list[tuple[str, RoutedLanguageModel]]:
        """The backends `purpose` tries, in order, each counted under the purpose's route; `local` only when deployed
        (and, for text users read, only with llm.generate_replies)."""
        route = ROUTES[purpose]
        out: list[tuple[str, RoutedLanguageModel]] = []
        for name in self._settings.llm.chain(purpose):
            if name == LOCAL:
                if self._local is not None:
                    out.append((name, self._local.for_route(route)))
            else:
                out.append((name, self.remote[name].for_route(route)))
        return out

    def planners(self, pack_dir: Path, pack: Pack) -> list[LlmWorkflowPlanner]:
        """The LLM planner of each `llm.use.planner` backend, in order (none: the turn keeps the local planners'
        decision). A pack missing a required prompt file does not start; the error names it."""
        chain = self.chain("planner")
        if not chain:
            return []
        prompts = PromptSet.load(pack_dir, self._settings.prompts)
        summariser = self.chain("summariser")
        # a history past the compaction budget is summarised by the first summariser backend, else extractively
        summarize = (
            lm_summarizer(summariser[0][1], max_tokens=self._settings.llm.reply_max_tokens * 4) if summariser else None
        )
        return [
            LlmWorkflowPlanner.configured(lm, pack, prompts, self._settings, backend=name, summarizer=summarize)
            for name, lm in chain
        ]

    def replies(self) -> Replies | None:
        """What writes social and emotion replies: the local model's DSPy programs when it is the only writer (as
        before there were backends), else seed 003's social responder over the chain; None: the templates."""
        chain = self.chain("social")
        llm = self._settings.llm
        if not chain:
            return None
        if [name for name, _ in chain] == [LOCAL]:
            return ReplyWriter(
                dspy_lm(chain[0][1], max_tokens=llm.reply_max_tokens), budget_s=self._settings.budgets.stage_s("reply")
            )
        backends = []
        for name, lm in chain:
            remote = llm.backends.get(name)
            temperature = remote.temperature if remote is not None and remote.temperature is not None else TEMPERATURE
            backends.append(
                ReplyBackend(
                    name, lm, temperature, timeout_s=remote.timeout_s if remote else None, remote=remote is not None
                )
            )
        return SocialResponder(
            backends,
            budget_s=self._settings.budgets.stage_s("reply"),
            extra_ms=self._settings.budgets.escalation_ms(),
        )

    def scheduling(self) -> SchedulingChain:
        """Seed 000's Scheduling chain, its texts by the programs of the first `llm.use.programs` backend when there
        is one (each call inside the escalation's extra time and the agent's phase), else by the templates."""
        chain = self.chain("programs")
        if not chain:
            return SchedulingChain()
        name, lm = chain[0]
        budgets = self._settings.budgets
        budget_s = (budgets.escalation_ms() / 1000.0) or budgets.stage_s("reply")
        remote = self._settings.llm.backends.get(name)
        if remote is not None:
            budget_s = min(budget_s, remote.timeout_s)
        texts = ProgramTexts(
            dspy_lm(lm, max_tokens=self._settings.llm.reply_max_tokens * 4), backend=name, budget_s=budget_s
        )
        return SchedulingChain(texts, texts_budget_s=budget_s)

    def summariser(self) -> LlmTextWriter | None:
        """The sub-agents' summaries (seed 000's SummaryWriter) by the first `llm.use.summariser` backend; None: the
        templates over the facts."""
        chain = self.chain("summariser")
        if not chain:
            return None
        return LlmTextWriter(dspy_lm(chain[0][1], max_tokens=self._settings.llm.reply_max_tokens * 4))

    async def aclose(self) -> None:
        for model in self.remote.values():
            await model.aclose()
