// The oldest approval waiting: what the agent wants to do, and the person's answer (allow
// once, for this chat, or deny), with an optional note the agent reads either way.
import { useState } from "react";
import { ALLOW_FOR_THIS_CHAT } from "./history.js";

export function Approval({ request, waiting, answer }) {
  const [note, setNote] = useState("");
  return (
    <section className="approval" aria-label="Approval">
      <p>
        <strong>Approval needed:</strong> {request.summary}.
        {request.destructive && " It changes things: check it first."}
      </p>
      {waiting > 1 && <p className="hint">{waiting - 1} more after this one.</p>}
      {request.detail && <pre className="code">{request.detail}</pre>}
      <label>
        A note for the agent (optional)
        <input value={note} onChange={(e) => setNote(e.target.value)} />
      </label>
      <div className="actions">
        <button type="button" className="primary" onClick={() => answer("allow_once", note)}>
          Allow once
        </button>
        <button type="button" onClick={() => answer("allow_session", note)}>
          {ALLOW_FOR_THIS_CHAT}
        </button>
        <button type="button" onClick={() => answer("deny", note)}>Deny</button>
      </div>
    </section>
  );
}
