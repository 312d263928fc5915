// How the turn was decided (routing_debug: each stage's candidates, fusion, the planner and its clause analysis)
// and what it ran (workflow: steps in order, their status, skip reasons and results).
import { h, ms, score } from "./dom.js";

const TOP = 3;

function candidates(list, n = TOP) {
  if (!list || !list.length) return h("span", { class: "hint", text: "none" });
  return h("ol", { class: "cands" }, list.slice(0, n).map((c) =>
    h("li", {}, h("code", { text: c.intent }), " ", h("span", { class: "score", text: score(c.score) }))));
}

function flags(stage) {
  const out = [];
  if (stage.degraded) out.push(h("span", { class: "badge bad", text: "degraded" }));
  if (stage.partial) out.push(h("span", { class: "badge warn", text: "partial" }));
  if (stage.error) out.push(h("span", { class: "badge bad", text: stage.error }));
  return out;
}

function stageTable(stages) {
  const names = Object.keys(stages);
  if (!names.length) return h("p", { class: "hint", text: "No routing stage ran in this turn (an answer that filled a slot, or a replay)." });
  return h("div", { class: "scroll" }, h("table", { class: "stages" },
    h("thead", {}, h("tr", {}, ["stage", "accepted", "top candidates", "latency", ""].map((t) => h("th", { scope: "col", text: t })))),
    h("tbody", {}, names.map((name) => {
      const s = stages[name];
      return h("tr", { "data-stage": name },
        h("th", { scope: "row", text: name }),
        h("td", { text: s.accepted ? `yes: ${s.selected_intent}` : "no" }),
        h("td", {}, candidates(s.candidates)),
        h("td", { text: ms(s.latency_ms) }),
        h("td", {}, flags(s)));
    }))));
}

function planner(p) {
  if (!p) return h("p", { class: "hint", id: "planner", text: "Planner: not called (the words asked for no plan)." });
  return h("div", { class: "planner", id: "planner" },
    h("p", {}, h("strong", { text: "Planner " }), `ran because: ${p.trigger}; `,
      p.accepted_by ? ["accepted by ", h("code", { text: p.accepted_by })] : "no planner accepted — fusion's decision stands",
      p.degraded ? h("span", { class: "badge bad", text: "degraded" }) : null),
    p.reason ? h("p", { class: "hint", text: p.reason }) : null,
    p.llm ? h("p", { class: "llm", id: "planner-llm" }, h("strong", { text: "LLM planner: " }), h("code", { text: p.llm.outcome }),
      p.llm.ttft_ms != null ? ` · TTFT ${Math.round(p.llm.ttft_ms)} ms` : "",
      p.llm.completion_tokens ? ` · ${p.llm.prompt_tokens} → ${p.llm.completion_tokens} tokens` : "",
      p.llm.reasons.length ? h("span", { class: "hint", text: ` — ${p.llm.reasons.join("; ")}` }) : null) : null,
    p.clauses && p.clauses.length ? h("div", { class: "scroll" }, h("table", { class: "clauses" },
      h("caption", { text: "Clause analysis" }),
      h("thead", {}, h("tr", {}, ["clause", "candidates", "chosen"].map((t) => h("th", { scope: "col", text: t })))),
      h("tbody", {}, p.clauses.map((c) => h("tr", {},
        h("td", { text: c.text }), h("td", {}, candidates(c.candidates)),
        h("td", {}, c.selected.length ? c.selected.map((s) => h("code", { text: s })) : h("span", { class: "hint", text: "—" }))))))) : null,
    p.detector_prior && p.detector_prior.length ? h("p", {}, "Detector prior: ", candidates(p.detector_prior, 5)) : null);
}

export function drawRouting(debug) {
  if (!debug) return [h("p", { class: "hint", text: "This event carries no routing (a decision or a selection continues an earlier turn)." })];
  const f = debug.fusion;
  const stages = { ...debug.stages };
  if (debug.detector) stages.detector = debug.detector;
  return [
    debug.rewrite && debug.rewrite.applied ? h("p", { class: "rewrite" }, "Rewrite: ", h("q", { text: debug.rewrite.original_text }),
      " → ", h("q", { text: debug.rewrite.rewritten_text }), ` (${debug.rewrite.reason})`) : null,
    stageTable(stages),
    f ? h("div", { class: "fusion", id: "fusion" },
      h("p", {}, h("strong", { text: "Fusion: " }), h("span", { class: `decision d-${f.decision}`, text: f.decision }),
        ` — ${f.reason} (top ${score(f.top_score)}, margin ${score(f.margin)})`),
      h("p", {}, "Ranked: ", candidates(f.ranked, 5))) : h("p", { class: "hint", text: "No fusion (answered before routing)." }),
    planner(debug.planner),
  ];
}

const STATUS_WORDS = { done: "done", skipped: "skipped", failed: "failed", pending: "waiting", waiting_slot: "waiting for a slot",
                       waiting_confirmation: "waiting for confirmation" };

function condition(c) {
  if (!c) return null;
  return h("span", { class: "cond" }, "if ", h("code", { text: `${c.source_step}.${c.field}` }), ` ${c.operator} `,
    h("code", { text: JSON.stringify(c.value) }));
}

export function drawWorkflow(wf) {
  if (!wf) return [h("p", { class: "hint", text: "No workflow in this turn." })];
  const steps = [...wf.steps].sort((a, b) => a.step - b.step);
  return [
    h("p", { class: "wf-head" }, h("span", { class: "badge", text: wf.type }), " ", h("span", { class: `badge s-${wf.status}`, text: wf.status }),
      wf.planner ? [" planned by ", h("code", { text: wf.planner })] : null),
    wf.summary ? h("p", { class: "summary", text: wf.summary }) : null,
    h("ol", { class: "steps", id: "steps" }, steps.map((s) => h("li", { class: `step s-${s.status}`, "data-status": s.status, "data-intent": s.intent_id },
      h("div", {}, h("strong", { text: s.intent_id }), " ",
        h("span", { class: "hint", text: [s.plugin_id || s.agent, s.action].filter(Boolean).join(" · ") }), " ",
        h("span", { class: `badge s-${s.status}`, text: STATUS_WORDS[s.status] || s.status }),
        s.requires_confirmation ? h("span", { class: "badge", text: "needs confirmation" }) : null),
      s.clause ? h("div", { class: "hint" }, "from ", h("q", { text: s.clause })) : null,
      s.depends_on.length || s.condition ? h("div", { class: "hint" },
        s.depends_on.length ? `after ${s.depends_on.join(", ")} ` : "", condition(s.condition)) : null,
      s.skip_reason ? h("div", { class: "skip", text: `skipped: ${s.skip_reason}` }) : null,
      s.result ? h("div", { class: "result" }, h("span", { text: s.result.message || "" }),
        s.result.data ? h("details", {}, h("summary", { text: "result data" }), h("pre", { text: JSON.stringify(s.result.data, null, 1) })) : null) : null))),
  ];
}
