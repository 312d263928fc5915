// The cards a turn can end with: a clarification (one question, or a batch answered at once), a selection among
// candidates, and the write gate's confirmation (preview, then confirm or reject: write.decide). `send(type, payload,
// said)` sends a frame and shows what the user said; a card answers once, then shows what was chosen.
import { h, localTime, uuid } from "./dom.js";

function done(card, text) {
  for (const el of card.querySelectorAll("button, input, textarea")) el.disabled = true;
  card.classList.add("answered");
  card.append(h("p", { class: "outcome", text }));
}

export function clarificationCard(p, send) {
  const batch = p.mode === "batch";
  const id = `q-${p.question_id}`;
  const card = h("form", { class: "card clarification", "data-card": "clarification", "data-key": p.question_id,
                           "aria-labelledby": `${id}-title` });
  const title = h("p", { class: "card-title", id: `${id}-title`,
                         text: batch ? `${p.questions.length} questions, answered together`
                           : p.question_type === "confirmation" ? "Confirm?" : "Question" });
  const fields = p.questions.map((q, i) => {
    const input = h("input", { id: `${id}-${i}`, name: q.field_name, autocomplete: "off", required: !batch || i === 0 });
    const options = (q.options || []).map((o) => {
      const value = o.value || o.label || Object.values(o)[0];
      return h("button", { type: "button", class: "option", text: o.label || value, onclick: () => { input.value = value; } });
    });
    return { q, input, el: h("div", { class: "field" }, h("label", { for: `${id}-${i}`, text: q.question_text }), input,
      options.length ? h("div", { class: "options" }, options) : null) };
  });
  const answer = (text) => {
    if (batch) {
      const answers = Object.fromEntries(fields.map((f) => [f.q.field_name, f.input.value.trim()]).filter(([, v]) => v));
      if (!Object.keys(answers).length) return;
      const said = Object.entries(answers).map(([k, v]) => `${k}: ${v}`).join("；");
      if (send("dialogue.answer", { client_message_id: uuid(), reply_to_question_id: p.question_id, answers }, said)) done(card, "answered");
    } else {
      const raw = (text ?? fields[0].input.value).trim();
      if (!raw) return;
      if (send("dialogue.answer", { client_message_id: uuid(), reply_to_question_id: p.question_id, raw_content: raw }, raw)) {
        done(card, `answered: ${raw}`);
      }
    }
  };
  card.addEventListener("submit", (e) => { e.preventDefault(); answer(); });
  const quick = p.question_type === "confirmation" ? [
    h("button", { type: "button", class: "primary", text: "确认", onclick: () => answer("确认") }),
    h("button", { type: "button", text: "取消", onclick: () => answer("取消") }),
  ] : [];
  card.append(title, ...fields.map((f) => f.el),
    h("div", { class: "actions" }, h("button", { type: "submit", class: quick.length ? null : "primary", text: "Answer" }), quick),
    h("p", { class: "hint", text: `${p.question_type} · ${p.reason} · expires ${localTime(p.expires_at)}` }));
  return card;
}

export function selectionCard(p, send) {
  const id = `s-${p.interaction_id}`;
  const card = h("form", { class: "card selection", "data-card": "selection", "data-key": p.interaction_id });
  const choices = p.candidates.map((c, i) => h("div", { class: "choice" },
    h("input", { type: "radio", name: id, id: `${id}-${i}`, value: c.id, required: true, checked: i === 0 }),
    h("label", { for: `${id}-${i}` }, h("strong", { text: c.title }), " ",
      h("span", { class: "hint", text: `${localTime(c.start_at)}${c.end_at ? ` – ${localTime(c.end_at)}` : ""} · ${c.item_type}` }))));
  card.addEventListener("submit", (e) => {
    e.preventDefault();
    const chosen = card.querySelector(`input[name="${id}"]:checked`);
    if (!chosen) return;
    const label = chosen.labels[0].querySelector("strong").textContent;
    if (send("selection.submit", { interaction_id: p.interaction_id, selected_candidate_ids: [chosen.value] }, `选择：${label}`)) {
      done(card, `chose: ${label}`);
    }
  });
  const cancel = () => {
    if (send("selection.cancel", { interaction_id: p.interaction_id }, "取消选择")) done(card, "cancelled");
  };
  card.append(h("fieldset", {}, h("legend", { text: p.question_text }), choices),
    h("div", { class: "actions" }, h("button", { type: "submit", class: "primary", text: "Choose" }),
      h("button", { type: "button", text: "Cancel", onclick: cancel })));
  return card;
}

export function confirmationCard(p, send) {
  const card = h("div", { class: "card confirmation", "data-card": "confirmation", "data-key": p.write_request_id,
                          role: "group", "aria-label": "Confirm the write" });
  // one idempotency key per decision: pressing twice, or after a reconnect, gets the same answer back
  const keys = { confirmed: uuid(), rejected: uuid() };
  const decide = (decision) => {
    const payload = { write_request_id: p.write_request_id, decision, idempotency_key: keys[decision], payload_hash: p.payload_hash };
    if (send("write.decide", payload, decision === "confirmed" ? "确认保存" : "不保存")) done(card, decision);
  };
  card.append(
    h("p", { class: "card-title", text: "Save this?" }),
    h("p", { class: "preview", text: p.preview_text }),
    h("details", {}, h("summary", { text: "what will be written" }), h("pre", { text: JSON.stringify(p.confirmation_payload, null, 1) })),
    h("div", { class: "actions" },
      h("button", { type: "button", class: "primary", "data-decision": "confirmed", text: "Confirm", onclick: () => decide("confirmed") }),
      h("button", { type: "button", "data-decision": "rejected", text: "Reject", onclick: () => decide("rejected") })),
    h("p", { class: "hint", text: `expires ${localTime(p.expires_at)} · payload ${p.payload_hash.slice(0, 12)}…` }));
  return card;
}

// The open question a snapshot reports, when its event is not the snapshot's last one.
export function pendingQuestionCard(q, send) {
  return clarificationCard({ question_id: q.question_id, mode: "single", question_type: "normal", reason: "missing_required_params",
    questions: [{ field_name: (q.missing_fields || [])[0] || "answer", question_text: q.question_text, options: [] }],
    expires_at: q.expires_at }, send);
}
