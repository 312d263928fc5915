// The live panel: GET /api/v1/metrics/summary every few seconds while the page is visible.
import { BASE, ms } from "./dom.js";

const EVERY_MS = 2000;
const SCOPES = { all_replicas: "all orchestrator replicas", process: "this process" };

export function startLive(root, scopeEl) {
  const set = (k, v) => { root.querySelector(`[data-k="${k}"]`).textContent = v; };
  async function poll() {
    if (document.visibilityState === "hidden") return;
    try {
      const resp = await fetch(`${BASE}/api/v1/metrics/summary`, { cache: "no-store" });
      if (!resp.ok) throw new Error(`HTTP ${resp.status}`);
      const s = await resp.json();
      const capped = (v) => (v === null ? "—" : v >= s.latency_cap_ms ? `≥ ${ms(v)}` : ms(v));
      set("rate", s.turns_per_s === null ? "—" : s.turns_per_s.toFixed(2));
      set("p50", capped(s.p50_ms));
      set("p99", capped(s.p99_ms));
      set("shed", String(s.shed));
      const degraded = Object.entries(s.degraded);
      set("degraded", degraded.length ? degraded.map(([k, v]) => `${k} ${v}`).join(", ") : "0");
      root.dataset.turns = String(s.turns);
      root.dataset.total = String(s.since_start.turns);
      scopeEl.textContent = `— last ${Math.round(s.window_s)} s, ${s.turns} turns, ${SCOPES[s.scope] || s.scope}` +
        ` (${s.since_start.turns} since start)`;
    } catch (err) {
      scopeEl.textContent = `— unavailable (${err.message})`;
    }
  }
  poll();
  return setInterval(poll, EVERY_MS);
}
