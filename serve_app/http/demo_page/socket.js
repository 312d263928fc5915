// One WebSocket to /ws/v1/conversation speaking seed 002's envelope, reconnecting with backoff. After a reconnect it
// asks for the snapshot (transport.resume) from the last message id it knows of: the frames it sent before the drop
// ran to their commit on the server, and what they produced is in that snapshot.
import { BASE } from "./dom.js";

const BACKOFF_MS = [500, 1000, 2000, 4000, 5000];
const PING_MS = 20000;

export class Connection {
  constructor({ onEvent, onState }) {
    this.onEvent = onEvent;
    this.onState = onState;
    this.ws = null;
    this.identity = null;
    this.attempt = 0;
    this.everOpened = false;
    this.lastSeen = null; // the newest conversation message id the page has learned
    this.timer = null;
    this.ping = null;
  }

  url() {
    const { userId, token } = this.identity;
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    const query = token ? `access_token=${encodeURIComponent(token)}` : `user_id=${encodeURIComponent(userId)}`;
    return `${scheme}://${location.host}${BASE}/ws/v1/conversation?${query}`;
  }

  // A new identity: a fresh conversation, no resume of the previous one.
  connect(identity) {
    this.identity = identity;
    this.everOpened = false;
    this.lastSeen = null;
    this.attempt = 0;
    this.open();
  }

  open() {
    clearTimeout(this.timer);
    if (this.ws) {
      this.ws.onclose = null;
      this.ws.close();
    }
    const ws = new WebSocket(this.url());
    this.ws = ws;
    this.onState("connecting", this.everOpened ? "reconnecting…" : "connecting…");
    ws.onopen = () => {
      const resumed = this.everOpened;
      this.everOpened = true;
      this.attempt = 0;
      this.onState("open", resumed ? "reconnected — resuming" : "connected");
      if (resumed) this.resume();
      clearInterval(this.ping);
      this.ping = setInterval(() => this.send("transport.ping", {}), PING_MS);
    };
    ws.onmessage = (message) => {
      let event;
      try {
        event = JSON.parse(message.data);
      } catch {
        return;
      }
      this.learn(event);
      this.onEvent(event);
    };
    ws.onclose = (close) => {
      clearInterval(this.ping);
      if (ws !== this.ws) return;
      if (close.code === 1008) {
        this.onState("closed", `refused: ${close.reason || "unauthorized"} — check the user id or token`);
        return;
      }
      const wait = BACKOFF_MS[Math.min(this.attempt, BACKOFF_MS.length - 1)];
      this.attempt += 1;
      this.onState("closed", `connection lost — reconnecting in ${(wait / 1000).toFixed(1)} s`);
      this.timer = setTimeout(() => this.open(), wait);
    };
  }

  // What a network drop looks like from here: the socket closes and the page reconnects on its own.
  drop() {
    if (this.ws) this.ws.close(4000, "dropped");
  }

  resume() {
    return this.send("transport.resume", { last_seen_message_id: this.lastSeen });
  }

  send(type, payload) {
    if (!this.ws || this.ws.readyState !== WebSocket.OPEN) return false;
    this.ws.send(JSON.stringify({ type, timestamp: new Date().toISOString(), payload }));
    return true;
  }

  learn(event) {
    const p = event.payload || {};
    if (event.type === "transport.snapshot") {
      const last = p.messages && p.messages[p.messages.length - 1];
      if (last) this.lastSeen = last.id;
      return;
    }
    const id = p.source_message_id || p.question_id || p.interaction_id;
    if (id) this.lastSeen = id;
  }
}
