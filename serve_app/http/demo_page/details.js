// The right-hand panel: the selected turn's status, latency waterfall, routing and workflow. The newest turn is
// selected as it arrives; each turn's "details" button selects it again.
import { drawRouting, drawWorkflow } from "./debug.js";
import { h, ms, replace } from "./dom.js";
import { drawWaterfall } from "./waterfall.js";

const $ = (id) => document.getElementById(id);
let turnCount = 0;
let selected = null;
let shown = null;

export const shownTurn = () => shown;

export function showTurn(turn, name, button) {
  selected?.setAttribute("aria-pressed", "false");
  selected = button;
  shown = turn;
  button?.setAttribute("aria-pressed", "true");
  $("turn-name").textContent = `— ${name}`;
  replace($("turn-head"), h("span", { class: `status s-${turn.status}`, "data-status": turn.status, text: turn.status }), " ",
    h("span", { text: turn.reply }));
  replace($("waterfall"), drawWaterfall(turn.timings, $("waterfall").clientWidth));
  replace($("routing"), ...drawRouting(turn.routing_debug));
  replace($("workflow"), ...drawWorkflow(turn.workflow));
}

export function turnFooter(turn, type) {
  turnCount += 1;
  const name = `#${turnCount} ${type}`;
  const t = turn.timings;
  const button = h("button", { type: "button", class: "link", "aria-pressed": "false", text: "details",
                               "aria-label": `Show the details of turn ${turnCount}`, onclick: () => showTurn(turn, name, button) });
  const footer = h("p", { class: "turn-meta" },
    h("span", { class: `status s-${turn.status}`, "data-status": turn.status, text: turn.status }),
    ` ${ms(t.total_ms)} / ${ms(t.budget_ms)}`,
    t.degraded.length ? h("span", { class: "badge bad", text: `degraded: ${t.degraded.join(", ")}` }) : null, " ", button);
  showTurn(turn, name, button);
  return footer;
}

// the waterfall is drawn to its container's width: draw it again when that changes
let resizing = null;
window.addEventListener("resize", () => {
  clearTimeout(resizing);
  resizing = setTimeout(() => { if (shown) replace($("waterfall"), drawWaterfall(shown.timings, $("waterfall").clientWidth)); }, 150);
});
