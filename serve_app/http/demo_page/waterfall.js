// A turn's latency waterfall: each stage's [start, end] from the request's arrival (timings.spans_ms) against the
// turn's budget (timings.budget_ms), degraded stages marked in words as well as colour, the budget line drawn.
import { h, ms, svg } from "./dom.js";

const LABEL = 96;
const ROW = 22;
const TOP = 22;
const RIGHT = 56;

function ticks(max) {
  const raw = max / 5;
  const step = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000].find((s) => s >= raw) || raw;
  const out = [];
  for (let t = 0; t <= max; t += step) out.push(t);
  return out;
}

export function rows(timings) {
  const spans = Object.entries(timings.spans_ms || {})
    .filter(([, span]) => Array.isArray(span) && span.length === 2)
    .sort((a, b) => a[1][0] - b[1][0] || a[1][1] - b[1][1]);
  const degraded = new Set(timings.degraded || []);
  const out = spans.map(([stage, [start, end]]) => ({ stage, start, end, degraded: degraded.has(stage) }));
  out.push({ stage: "total", start: 0, end: timings.total_ms || 0, degraded: false, total: true });
  return out;
}

// `width`: the container's width in CSS pixels, so that the labels keep their size on a phone
export function drawWaterfall(timings, width = 640) {
  const WIDTH = Math.max(300, Math.min(900, Math.round(width)));
  const list = rows(timings);
  const budget = timings.budget_ms || 0;
  const max = Math.max(budget, ...list.map((r) => r.end), 1) * 1.04;
  const chart = WIDTH - LABEL - RIGHT;
  const x = (v) => LABEL + (v / max) * chart;
  const height = TOP + list.length * ROW + 20; // room under the rows for the budget's label
  const over = budget && timings.total_ms > budget;
  const degraded = timings.degraded || [];
  const label = `Latency waterfall: ${list.length - 1} stages, total ${ms(timings.total_ms)} of a ${ms(budget)} budget` +
    (degraded.length ? `; degraded: ${degraded.join(", ")}` : "; nothing degraded");
  const chartEl = svg("svg", { viewBox: `0 0 ${WIDTH} ${height}`, role: "img", "aria-label": label, class: "wf" },
    svg("title", { text: label }),
    ticks(max).map((t) => [
      svg("line", { x1: x(t), x2: x(t), y1: TOP - 4, y2: height - 6, class: "grid" }),
      svg("text", { x: x(t), y: 12, class: "tick", "text-anchor": "middle", text: `${t}` }),
    ]),
    list.map((r, i) => {
      const y = TOP + i * ROW;
      const cls = r.total ? (over ? "bar total over" : "bar total") : r.degraded ? "bar degraded" : "bar";
      return svg("g", { class: "row", "data-stage": r.stage, "data-degraded": r.degraded ? "true" : "false" },
        svg("text", { x: LABEL - 6, y: y + 14, "text-anchor": "end", class: r.degraded ? "name degraded" : "name",
                      text: r.degraded ? `⚠ ${r.stage}` : r.stage }),
        svg("rect", { x: x(r.start), y: y + 3, width: Math.max(2, x(r.end) - x(r.start)), height: ROW - 7, class: cls, rx: 2 },
          svg("title", { text: `${r.stage}: ${ms(r.start)} → ${ms(r.end)}${r.degraded ? " (degraded)" : ""}` })),
        svg("text", { x: Math.min(x(r.end) + 4, WIDTH - RIGHT + 4), y: y + 14, class: "dur",
                      text: `${(r.end - r.start).toFixed(1)}${r.degraded ? " degraded" : ""}` }));
    }),
    budget ? [
      svg("line", { x1: x(budget), x2: x(budget), y1: TOP - 6, y2: height - 4, class: "budget", "data-budget": budget }),
      svg("text", { x: x(budget) - 3, y: height - 3, "text-anchor": "end", class: "budget-label", text: `budget ${budget} ms` }),
    ] : null);
  const table = h("table", { class: "spans" },
    h("caption", { text: "The same spans, in ms from arrival" }),
    h("thead", {}, h("tr", {}, ["stage", "start", "end", "took", ""].map((t) => h("th", { scope: "col", text: t })))),
    h("tbody", {}, list.map((r) => h("tr", { class: r.degraded ? "degraded" : null },
      h("th", { scope: "row", text: r.stage }), h("td", { text: r.start.toFixed(1) }), h("td", { text: r.end.toFixed(1) }),
      h("td", { text: (r.end - r.start).toFixed(1) }), h("td", { text: r.degraded ? "degraded" : "" })))));
  return h("div", {},
    chartEl,
    h("p", { class: over ? "verdict over" : "verdict" },
      `total ${ms(timings.total_ms)} of ${ms(budget)}`, over ? " — over budget" : "",
      degraded.length ? ` · degraded: ${degraded.join(", ")}` : " · nothing degraded"),
    h("details", {}, h("summary", { text: "as a table" }), table));
}
