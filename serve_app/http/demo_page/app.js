// The page: the conversation on the left, the selected turn's details on the right (details.js).
// Frames on one connection are answered in order, so each event belongs to the oldest frame still waiting.
import { clarificationCard, confirmationCard, pendingQuestionCard, selectionCard } from "./cards.js";
import { shownTurn, turnFooter } from "./details.js";
import { BASE, h, uuid } from "./dom.js";
import { startLive } from "./live.js";
import { Recorder, upload } from "./media.js";
import { shownIn } from "./resend.js";
import { Connection } from "./socket.js";

const ENDS_TURN = new Set(["dialogue.clarification", "selection.required", "write.confirmation_required", "write.applied",
  "execution.result", "dialogue.error", "execution.error"]);
const $ = (id) => document.getElementById(id);
const log = $("log");
const pending = []; // entries waiting for their events, oldest first
const lost = []; // entries whose connection dropped before their answer
const RETRIES = 3;
let retrying = 0; // entries waiting to be sent again after a retryable refusal
const cards = new Map();

function scrollDown() {
  log.lastElementChild?.scrollIntoView({ block: "end" });
}

function waiting(entry) {
  entry.classList.add("waiting");
  entry.setAttribute("aria-busy", "true");
  pending.push(entry);
}

function send(type, payload, said, kind) {
  if (!conn.send(type, payload)) {
    log.append(h("li", { class: "msg error" }, h("p", { text: "Not sent: the connection is not open yet." })));
    return false;
  }
  log.append(h("li", { class: `msg user ${kind || "text"}` }, h("p", { text: said })));
  const entry = h("li", { class: "msg bot" }, h("p", { class: "hint", text: "…" }));
  entry.frame = { type, payload };
  log.append(entry);
  waiting(entry);
  scrollDown();
  return true;
}

function card(event) {
  const p = event.payload;
  const key = p.write_request_id || p.interaction_id || p.question_id;
  if (cards.has(key) && cards.get(key).isConnected) return null;
  const make = { "dialogue.clarification": clarificationCard, "selection.required": selectionCard,
                 "write.confirmation_required": confirmationCard }[event.type];
  const el = make ? make(p, send) : null;
  if (el) cards.set(key, el);
  return el;
}

// One event as the assistant's part of the conversation.
function render(event) {
  const p = event.payload || {};
  const parts = [];
  switch (event.type) {
    case "dialogue.decision":
      parts.push(h("p", { class: "step-line" }, "decided → ", h("code", { text: `${p.target_agent_name}.${p.target_function_name}` }),
        p.reply ? ` — ${p.reply}` : ""));
      break;
    case "execution.processing":
      parts.push(h("p", { class: "step-line", text: p.stage === "planning"
        ? `planning with the LLM… (the turn's budget is now ${p.budget_ms} ms)`
        : `${p.target_agent_name}: ${p.stage.replace("_", " ")}…` }));
      break;
    case "selection.required":
      parts.push(h("p", { class: "reply", text: p.question_text }));
      break;
    case "dialogue.clarification":
      break; // the card asks its questions
    case "write.applied":
      parts.push(h("p", { class: "reply applied", "data-applied": p.applied_target_id || "", text: `✓ ${p.turn.reply} ${p.message || ""}`.trim() }));
      break;
    case "dialogue.error":
    case "execution.error":
      parts.push(h("p", { class: "reply error", role: "alert" }, h("code", { text: p.code }), ` ${p.message}`,
        p.field ? ` (field ${p.field})` : "", p.retry_after_s ? ` — retry in ${p.retry_after_s} s` : ""));
      break;
    default:
      if (p.turn) parts.push(h("p", { class: "reply", text: p.reply || p.turn.reply }));
  }
  const c = card(event);
  if (c) parts.push(c);
  if (p.turn) parts.push(turnFooter(p.turn, event.type));
  return parts;
}

// A retryable refusal (overloaded, starting, the store unavailable): nothing ran, so the same frame, with its same
// idempotency key, goes again after the pause the server asked for.
function retry(entry, p) {
  entry.retries = (entry.retries || 0) + 1;
  entry.append(h("p", { class: "note error" }, h("code", { text: p.code }),
    ` ${p.message} — sent again in ${p.retry_after_s} s (${entry.retries}/${RETRIES})`));
  retrying += 1;
  setTimeout(() => {
    retrying -= 1;
    if (conn.send(entry.frame.type, entry.frame.payload)) waiting(entry);
    else lost.push(entry);
  }, p.retry_after_s * 1000);
}

function onEvent(event) {
  if (event.type === "transport.pong") return;
  if (event.type === "transport.snapshot") return snapshot(event.payload);
  let entry = pending[0];
  if (!entry) {
    entry = h("li", { class: "msg bot" });
    log.append(entry);
  }
  if (entry.classList.contains("waiting")) {
    for (const note of entry.querySelectorAll(":scope > p.hint")) if (note.textContent === "…") note.remove();
    entry.classList.remove("waiting");
  }
  const p = event.payload || {};
  if (p.retry_after_s && entry.frame && pending[0] === entry && (entry.retries || 0) < RETRIES) {
    pending.shift();
    return retry(entry, p);
  }
  entry.dataset.events = `${entry.dataset.events ? `${entry.dataset.events} ` : ""}${event.type}`;
  entry.append(...render(event));
  if (ENDS_TURN.has(event.type) && pending[0] === entry) {
    pending.shift();
    entry.removeAttribute("aria-busy");
  }
  scrollDown();
}

function snapshot(s) {
  const block = h("li", { class: "msg snapshot", "data-found": String(s.found_last_seen) },
    h("p", { class: "card-title", text: `Snapshot: ${s.messages.length} message(s) ${s.found_last_seen ? "after the last one seen" : "(the most recent)"}` }),
    s.messages.length ? h("ol", { class: "snapshot-messages" }, s.messages.map((m) => h("li", { "data-kind": m.metadata.message_kind, "data-id": m.id },
      h("span", { class: "hint", text: `${m.role} · ${m.metadata.message_kind}: ` }), m.raw_content))) : null);
  const last = s.last_event;
  if (last && ENDS_TURN.has(last.type)) {
    block.append(h("p", { class: "hint", text: `last event: ${last.type}` }), ...render(last));
  }
  // what the drop cut off: shown here if it ran, else sent again (same idempotency key, so it never runs twice)
  for (const entry of lost.splice(0)) {
    if (shownIn(entry.frame, s.messages)) {
      entry.append(h("p", { class: "hint", text: "answered while disconnected: see the snapshot below" }));
    } else if (conn.send(entry.frame.type, entry.frame.payload)) {
      entry.append(h("p", { class: "hint", text: "not in the snapshot: sent again" }));
      waiting(entry);
    }
  }
  const question = s.pending_clarification;
  if (question && !(cards.has(question.question_id) && cards.get(question.question_id).isConnected)) {
    const c = pendingQuestionCard(question, send);
    cards.set(question.question_id, c);
    block.append(c);
  }
  log.append(block);
  if ($("connection").dataset.state === "open") $("connection").textContent = "connected (resumed from the snapshot)";
  scrollDown();
}

function onState(state, text) {
  const el = $("connection");
  el.dataset.state = state;
  el.textContent = text;
  if (state === "closed") {
    // their events will not come on this socket: the snapshot after the reconnect says what became of them
    while (pending.length) {
      const entry = pending.shift();
      entry.classList.remove("waiting");
      entry.removeAttribute("aria-busy");
      entry.append(h("p", { class: "hint", text: "connection lost before the answer" }));
      lost.push(entry);
    }
  }
}

const conn = new Connection({ onEvent, onState });

function identity() {
  return { userId: $("user-id").value.trim(), token: $("token").value.trim() };
}

function connect() {
  const who = identity();
  pending.length = 0; // another conversation: what the previous one waited for does not belong here
  lost.length = 0;
  localStorage.setItem("baton.user_id", who.userId);
  log.append(h("li", { class: "msg divider", text: who.token ? "signed in with a token" : `local mode as ${who.userId}` }));
  conn.connect(who);
}

function setupComposer() {
  const box = $("message");
  $("composer").addEventListener("submit", (e) => {
    e.preventDefault();
    const text = box.value.trim();
    if (!text) return;
    if (send("dialogue.input", { client_message_id: uuid(), modality: "text", raw_content: text }, text)) box.value = "";
  });
  box.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      $("composer").requestSubmit();
    }
  });
}

async function mediaTurn(blob, fileName, fileType, said) {
  const note = $("media-note");
  note.textContent = `uploading ${fileType} (${Math.ceil(blob.size / 1024)} KB)…`;
  try {
    const up = await upload(blob, fileName, fileType, identity());
    note.textContent = `uploaded ${up.object_key}`;
    send("dialogue.input", { client_message_id: uuid(), modality: fileType === "audio" ? "voice_asr" : "image_ocr", source_url: up.source_url },
      said, fileType);
  } catch (err) {
    note.textContent = "";
    log.append(h("li", { class: "msg error" }, h("p", { role: "alert" }, `upload refused: `, h("code", { text: err.code || "error" }), ` ${err.message}`)));
  }
}

function setupMedia() {
  const button = $("record");
  const recorder = new Recorder({
    onState: (on) => {
      button.setAttribute("aria-pressed", String(on));
      button.textContent = on ? "Stop and send" : "Record voice";
    },
    onRecorded: (blob, name) => mediaTurn(blob, name, "audio", `🎤 voice message (${(blob.size / 1024).toFixed(0)} KB)`),
  });
  if (!Recorder.available()) {
    button.disabled = true;
    $("media-note").textContent = "Voice needs a microphone and a secure page (localhost or https).";
  }
  button.addEventListener("click", async () => {
    if (recorder.recording) return recorder.stop();
    try {
      await recorder.start();
    } catch (err) {
      $("media-note").textContent = `no microphone: ${err.message}`;
    }
  });
  $("image").addEventListener("change", (e) => {
    const file = e.target.files[0];
    if (file) mediaTurn(file, file.name, "image", `🖼 ${file.name}`);
    e.target.value = "";
  });
}

// One cluster serving several packs: each pack's app has its own page, and the chooser goes to the other's (the user id
// is kept: the page's origin is the same). A pack served alone shows no chooser.
function chooseAssistant() {
  fetch(`${BASE}/demo/assistants`).then((r) => r.json()).then(({ current, assistants }) => {
    const select = $("assistant");
    if (Object.keys(assistants).length < 2) return;
    for (const name of Object.keys(assistants)) select.append(h("option", { value: name, text: name }));
    select.value = current;
    select.addEventListener("change", () => { location.href = `${assistants[select.value]}/demo`; });
    $("assistant-choice").hidden = false;
  }).catch(() => {});
}

function start() {
  // never from the URL: a link could otherwise sign the operator in as someone else (local mode has no password);
  // a per-browser id kept in localStorage, or what the operator types in the field
  $("user-id").value = localStorage.getItem("baton.user_id") || `demo-${uuid().slice(0, 8)}`;
  $("identity").addEventListener("submit", (e) => { e.preventDefault(); connect(); });
  $("resync").addEventListener("click", () => conn.resume());
  setupComposer();
  setupMedia();
  startLive($("live"), $("live-scope"));
  fetch(`${BASE}/health`).then((r) => r.json()).then((b) => { $("pack").textContent = b.pack ? `(pack ${b.pack}${b.status === "ok" ? "" : `, ${b.status}`})` : ""; })
    .catch(() => {});
  chooseAssistant();
  connect();
  window.batonDemo = { conn, busy: () => pending.length + retrying, shown: shownTurn };
}

start();
