// Frames whose answer a dropped connection lost. Each carries its idempotency key (the input's client_message_id,
// the decision's idempotency_key, the selection's interaction), so sending one again is safe: the server replays
// what it already produced, and runs it only if it never arrived. The snapshot shows which ones ran already.

const KINDS = {
  "write.decide": ["confirmation_decision"],
  "selection.submit": ["selection_submit"],
  "selection.cancel": ["selection_cancel"],
};

export function shownIn(frame, messages) {
  const p = frame.payload;
  return messages.some((m) => {
    const meta = m.metadata || {};
    if (p.client_message_id) return meta.client_message_id === p.client_message_id;
    if (!(KINDS[frame.type] || []).includes(meta.message_kind)) return false;
    if (p.write_request_id) return meta.write_request_id === p.write_request_id;
    return (meta.parsed_params || {}).interaction_id === p.interaction_id;
  });
}
