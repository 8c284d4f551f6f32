// One open chat: its history, the reply being written with the tool calls it makes, the
// approval waiting for the person, and the controls (role, model, AutoChat, Stop, Retry,
// Delete). The history is read once; from there on the chat's events keep it current, from
// the event after the one the history holds, so nothing is missed or shown twice.
import { useEffect, useRef, useState } from "react";
import { applyEvent, chatFrom, entriesOf, imageSource, roleTitle } from "./history.js";

export function Chat({ client, api, sessionId, offer, onGone, onSignedOut }) {
  const [chat, setChat] = useState(null);
  const [problem, setProblem] = useState(null);
  const [generation, setGeneration] = useState(0); // read the history again (after a resync)

  function failed(error) {
    if (error instanceof api.ApiError && error.status === 401) onSignedOut();
    else if (error instanceof api.ApiError && error.status === 404) onGone();
    else setProblem(error.message);
  }

  useEffect(() => {
    let stream = null;
    let closed = false;
    (async () => {
      try {
        const detail = await client.getSession(sessionId);
        if (closed) return;
        setChat(chatFrom(detail));
        stream = client.events(
          sessionId,
          {
            onEvent: (event) => setChat((current) => applyEvent(current, event)),
            onResync: () => setGeneration((n) => n + 1),
            onClosed: failed,
          },
          { since: `${detail.epoch}-${detail.last_seq}` },
        );
      } catch (error) {
        failed(error);
      }
    })();
    return () => {
      closed = true;
      stream?.close();
    };
  }, [client, sessionId, generation]);

  if (chat === null) {
    return problem ? <p role="alert" className="problem">{problem}</p> : <p className="hint">Loading…</p>;
  }

  // Runs a request; what the server refused is said. True when it went through.
  async function act(action) {
    setProblem(null);
    try {
      await action();
      return true;
    } catch (error) {
      failed(error);
      return false;
    }
  }

  const record = chat.session;
  const running = chat.busy || chat.approvals.length > 0;
  const model = record.settings?.model || offer.defaultModel || "";
  const live = Object.values(chat.streaming);

  return (
    <section className="chat" aria-label="Chat">
      <header>
        <h2>{record.title || "Untitled chat"}</h2>
        <span className={`badge state-${chat.state}`} role="status" aria-label="State">
          {chat.state}
        </span>
      </header>
      <div className="controls">
        <label>
          Agent role
          <select
            value={record.agent}
            onChange={(e) => {
              const agent = e.target.value;
              setChat((c) => ({ ...c, session: { ...c.session, agent } }));
              act(() => client.updateSession(sessionId, { agent }));
            }}
          >
            {offer.agents.map((name) => (
              <option key={name} value={name}>{roleTitle(name)}</option>
            ))}
          </select>
        </label>
        <label>
          Model
          <select
            value={model}
            onChange={(e) => {
              const chosen = e.target.value;
              setChat((c) => ({
                ...c,
                session: { ...c.session, settings: { ...c.session.settings, model: chosen } },
              }));
              act(() => client.updateSession(sessionId, { model: chosen }));
            }}
          >
            {offer.models.map((name) => (
              <option key={name} value={name}>{name}</option>
            ))}
          </select>
        </label>
        <AutoChat client={client} sessionId={sessionId} record={record} act={act}
          setChat={setChat} note={chat.autochat} />
      </div>
      <div className="actions">
        <button type="button" disabled={!running} onClick={() => act(() => client.stop(sessionId))}>
          Stop
        </button>
        <button
          type="button"
          disabled={running || chat.messages.length === 0}
          onClick={() => act(() => client.retry(sessionId))}
        >
          Retry last turn
        </button>
        <button
          type="button"
          onClick={() => {
            if (window.confirm("Delete this chat and its files, for good?")) {
              act(async () => {
                await client.deleteSession(sessionId);
                onGone();
              });
            }
          }}
        >
          Delete chat
        </button>
      </div>
      {problem && <p role="alert" className="problem">{problem}</p>}
      {chat.problem && <p role="alert" className="problem">{chat.problem}</p>}
      <ol className="messages" aria-label="Conversation" aria-live="polite">
        {entriesOf(chat.messages).map((entry) => (
          <Entry key={entry.key} entry={entry} running={chat.busy} />
        ))}
        {live.map((reply) => (
          <li key={reply.id} className="entry assistant writing">
            {reply.agent && <p className="speaker">{roleTitle(reply.agent)}</p>}
            {reply.reasoning && <details><summary>Reasoning</summary><pre>{reply.reasoning}</pre></details>}
            <div className="text">{reply.text || "…"}</div>
          </li>
        ))}
      </ol>
      {chat.approvals.length > 0 && (
        <Approval
          key={chat.approvals[0].approval_id}
          request={chat.approvals[0]}
          waiting={chat.approvals.length}
          answer={(decision, note) =>
            act(() =>
              client.answerApproval(sessionId, chat.approvals[0].approval_id, decision, {
                note: note || undefined,
              }),
            )
          }
        />
      )}
      <Composer send={(text) => act(() => client.sendMessage(sessionId, text))} />
    </section>
  );
}

function Entry({ entry, running }) {
  return (
    <li className={`entry ${entry.role}`}>
      {entry.speaker && <p className="speaker">{entry.speaker}</p>}
      {entry.reasoning && (
        <details>
          <summary>Reasoning</summary>
          <pre>{entry.reasoning}</pre>
        </details>
      )}
      {entry.kind === "code" || entry.kind === "console" ? (
        <pre className="code">{entry.text}</pre>
      ) : (
        entry.text && <div className="text">{entry.text}</div>
      )}
      {entry.images.map((image, i) => {
        const source = imageSource(image);
        return source ? (
          <img key={i} src={source} alt={`picture ${i + 1}`} />
        ) : (
          <p key={i} className="hint">(an image at {image.url}, not loaded)</p>
        );
      })}
      {entry.calls.map((call) => (
        <details key={call.id} className="call" open={call.result === null}>
          <summary>
            {call.name}
            {call.result === null ? (running ? " (running)" : " (no result)") : call.isError ? " (error)" : ""}
          </summary>
          <pre>{call.arguments}</pre>
          {call.result !== null && <pre className="result">{call.result}</pre>}
        </details>
      ))}
      {entry.notes.map((note, i) => (
        <p key={i} className="note">{note}</p>
      ))}
    </li>
  );
}

function Approval({ request, waiting, answer }) {
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
          Allow for this session
        </button>
        <button type="button" onClick={() => answer("deny", note)}>Deny</button>
      </div>
    </section>
  );
}

function AutoChat({ client, sessionId, record, act, setChat, note }) {
  const enabled = Boolean(record.autochat?.enabled);
  return (
    <div className="autochat">
      <label>
        <input
          type="checkbox"
          checked={enabled}
          onChange={(e) => {
            const on = e.target.checked;
            setChat((c) => ({
              ...c,
              session: { ...c.session, autochat: { ...c.session.autochat, enabled: on } },
            }));
            act(() => client.updateSession(sessionId, { autochat: { enabled: on } }));
          }}
        />
        AutoChat: keep working on its own
      </label>
      <span className="hint">
        {enabled ? `On: up to ${record.autochat.max_turns} automatic turns.` : "Off."}
      </span>
      {note && <p className="note">{note}</p>}
    </div>
  );
}

function Composer({ send }) {
  const [text, setText] = useState("");
  const box = useRef(null);
  const [sending, setSending] = useState(false);
  async function submit() {
    if (!text.trim() || sending) return;
    setSending(true);
    const sent = await send(text); // refused (too long, signed out): the text stays
    setSending(false);
    if (sent) setText("");
    box.current?.focus();
  }
  return (
    <form
      className="composer"
      onSubmit={(e) => {
        e.preventDefault();
        submit();
      }}
    >
      <textarea
        ref={box}
        aria-label="Message"
        placeholder="Message the agent. Enter sends, Shift+Enter adds a line."
        value={text}
        onChange={(e) => setText(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter" && !e.shiftKey && !e.nativeEvent.isComposing) {
            e.preventDefault();
            submit();
          }
        }}
      />
      <button type="submit" className="primary" disabled={sending}>Send</button>
    </form>
  );
}
