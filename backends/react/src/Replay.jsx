// An export shown step by step, as the chat went: the server reads the file (POST
// /api/sessions/replay) and answers its events, which are played here into a view of their
// own. A replay is not a chat: nothing is saved, and nothing can be sent from it.
import { useEffect, useMemo, useState } from "react";
import { Entry, LiveEntry } from "./Entry.jsx";
import { applyEvent, chatFrom, entriesOf } from "./history.js";

const STEP_MS = 250; // the longest pause between two steps (longer recorded gaps are cut)

/** How long to wait before showing `event` after `previous`: the recorded gap, at most a
 * step; events recorded at the same moment (or a replay made from messages) a fifth of one. */
export function pauseBefore(previous, event) {
  const gap = Date.parse(event.at) - Date.parse(previous.at);
  return Math.min(Number.isFinite(gap) && gap > 0 ? gap : 0, STEP_MS) || STEP_MS / 5;
}

const NOTHING_YET = { session: {}, messages: [], streaming: [], pending_approvals: [], state: "STOP" };

export function Replay({ replay, onClose }) {
  const [chat, setChat] = useState(() => chatFrom(NOTHING_YET));
  const [ended, setEnded] = useState(false);
  useEffect(() => {
    const events = replay.events;
    let timer = null;
    let next = 0;
    setChat(chatFrom(NOTHING_YET)); // (another export picked while one plays starts afresh)
    setEnded(false);
    const step = () => {
      if (next === events.length) {
        setEnded(true);
        return;
      }
      const event = events[next];
      setChat((current) => applyEvent(current, event));
      next += 1;
      timer = setTimeout(step, next < events.length ? pauseBefore(event, events[next]) : 0);
    };
    step();
    return () => clearTimeout(timer);
  }, [replay]);

  const messages = chat.messages;
  const entries = useMemo(() => entriesOf(messages), [messages]);
  const count = `${replay.message_count} message${replay.message_count === 1 ? "" : "s"}`;
  return (
    <section className="chat" aria-label="Replay">
      <header>
        <h2>Replay: {replay.title || "Untitled chat"}</h2>
        <button type="button" onClick={onClose}>Close the replay</button>
      </header>
      <p className="hint">
        {count}, shown as the chat went. A replay is not a chat: nothing here is saved.
      </p>
      <ol className="messages" aria-label="Conversation">
        {entries.map((entry) => (
          <Entry key={entry.key} entry={entry} running={!ended} />
        ))}
        {Object.values(chat.streaming).map((reply) => (
          <LiveEntry key={reply.id} reply={reply} />
        ))}
      </ol>
      {ended && (
        <p className="hint" role="status">
          End of the replay. Open a chat, or start a new one.
        </p>
      )}
    </section>
  );
}
