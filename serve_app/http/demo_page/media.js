// Voice and image turns: record with MediaRecorder (or pick an image), upload to /api/v1/media/upload, then send a
// dialogue.input with the returned source_url (modality voice_asr / image_ocr). Upload refusals come back as the
// error envelope and are shown as they are.
import { BASE } from "./dom.js";

export async function upload(blob, fileName, fileType, identity) {
  const form = new FormData();
  form.append("file_type", fileType);
  if (!identity.token) form.append("user_id", identity.userId);
  form.append("file", blob, fileName);
  const headers = identity.token ? { Authorization: `Bearer ${identity.token}` } : {};
  const resp = await fetch(`${BASE}/api/v1/media/upload`, { method: "POST", body: form, headers });
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok) {
    const e = body.error || { code: `http_${resp.status}`, message: resp.statusText };
    throw Object.assign(new Error(e.message), { code: e.code, field: e.field });
  }
  return body;
}

const TYPES = ["audio/webm;codecs=opus", "audio/ogg;codecs=opus", "audio/webm", "audio/mp4"];

export class Recorder {
  constructor({ onRecorded, onState }) {
    this.onRecorded = onRecorded;
    this.onState = onState;
    this.recorder = null;
  }

  static available() {
    return Boolean(navigator.mediaDevices && navigator.mediaDevices.getUserMedia && window.MediaRecorder);
  }

  get recording() {
    return this.recorder !== null && this.recorder.state === "recording";
  }

  async start() {
    const stream = await navigator.mediaDevices.getUserMedia({ audio: true });
    const mimeType = TYPES.find((t) => MediaRecorder.isTypeSupported(t));
    const recorder = new MediaRecorder(stream, mimeType ? { mimeType } : {});
    const chunks = [];
    recorder.ondataavailable = (e) => { if (e.data.size) chunks.push(e.data); };
    recorder.onstop = () => {
      for (const track of stream.getTracks()) track.stop();
      this.recorder = null;
      const type = recorder.mimeType || "audio/webm";
      this.onState(false);
      this.onRecorded(new Blob(chunks, { type }), type.includes("ogg") ? "voice.ogg" : type.includes("mp4") ? "voice.m4a" : "voice.webm");
    };
    recorder.start();
    this.recorder = recorder;
    this.onState(true);
  }

  stop() {
    if (this.recording) this.recorder.stop();
  }
}
