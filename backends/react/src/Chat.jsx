// One open chat: its history, the reply being written with the tool calls it makes (one
// running shows what it prints as it runs), the approval waiting for the person, and the
// controls (role, model, AutoChat, settings, Stop, Retry, Edit, Clear, Delete, Export). The
// history is read once; from there on the chat's events keep it current, from the event
// after the one the history holds, so nothing is missed or shown twice. When the history is
// cut (a retry, an edit or a clear, from any tab), or events were missed, it is read again.
import { useEffect, useMemo, useRef, useState } from "react";
import { Approval } from "./Approval.jsx";
import { Composer } from "./Composer.jsx";
import { Entry, LiveEntry, RunningCall } from "./Entry.jsx";
import { AllowedPanel, AutoChatPanel, MemoryPanel, SettingsPanel, ToolsPanel } from "./Panels.jsx";
import { Title } from "./Title.jsx";
import { exportChat } from "./Transfer.jsx";
import {
  applyEvent,
  badgeWords,
  chatFrom,
  entriesOf,
  lastWritten,
  memoryView,
  roleTitle,
  usageLine,
  withQueued,
} from "./history.js";

export function Chat({ client, api, sessionId, offer, notice, onGone, onSignedOut }) {
  const [chat, setChat] = useState(null);
  const [problem, setProblem] = useState(null);
  const [warning, setWarning] = useState(null);
  // {id, text, images} of the message being edited (its id: the server refuses the edit if
  // another message was sent since, from another tab, instead of dropping that one)
  const [editing, setEditing] = useState(null);
  const [generation, setGeneration] = useState(0); // bumped: read the history again
  // Saves on their way, oldest first: {changes, settled}. A message waits for them (a role
  // picked, then Enter at once), else it could reach the server first and run with what the
  // chat had before. Their changes show over what events say meanwhile: an event can carry a
  // whole record (all of AutoChat's fields, from a save made a moment before or in another
  // tab) as it was before this save reached the server, and would otherwise undo on the page
  // what the person just did (a switch flipped back) until the save's own answer came.
  const saving = useRef([]);
  const pendingOver = (session) =>
    saving.current.reduce((shown, { changes }) => withChanges(shown, changes), session);

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
        const [detail, memory] = await Promise.all([
          client.getSession(sessionId),
          client.memory(sessionId),
        ]);
        if (closed) return;
        setChat((before) => {
          // What waits: what the server says, and what this page queued that is not in the
          // history yet (a message sent while the history was read).
          const read = chatFrom(detail);
          const known = new Set(read.queued.map((q) => q.id));
          const waiting = (before?.queued ?? []).filter(
            (q) => !known.has(q.id) && !detail.messages.some((m) => m.id === q.id),
          );
          const session = pendingOver(read.session); // (saves still on their way show)
          return { ...read, session, queued: [...read.queued, ...waiting], memory };
        });
        stream = client.events(
          sessionId,
          {
            onEvent: (event) =>
              setChat((current) => {
                const next = applyEvent(current, event);
                if (event.type !== "session_updated") return next;
                return { ...next, session: pendingOver(next.session) };
              }),
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

  // Drawn again only when the history changes, not on every word of a streaming reply.
  const messages = chat?.messages;
  const entries = useMemo(() => (messages ? entriesOf(messages) : []), [messages]);
  const memory = chat?.memory;
  const remembered = useMemo(() => memoryView(memory, messages ?? []), [memory, messages]);
  const stale = chat?.stale;
  useEffect(() => {
    if (stale) setGeneration((n) => n + 1);
  }, [stale]);
  // An edit ends when the message it edits leaves the history (a Clear, from any tab).
  const edited = editing?.id;
  useEffect(() => {
    if (edited && messages && !messages.some((m) => m.id === edited)) setEditing(null);
  }, [edited, messages]);
  // The chat's tools and what a call of each does: read again when what decides it changes
  // (the modes kept with the settings, the tools allowed for the session).
  const [tools, setTools] = useState([]);
  const modes = JSON.stringify(chat?.session?.settings?.permissions ?? {});
  const allowed = (chat?.allowed ?? []).join(",");
  useEffect(() => {
    let closed = false;
    client.tools(sessionId).then(
      (answer) => !closed && setTools(answer.tools),
      () => !closed && setTools([]),
    );
    return () => {
      closed = true;
    };
  }, [client, sessionId, modes, allowed]);

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

  // A change shows at once; the server's answer then stands for the fields it changed, and
  // a refusal reads the chat again, so what shows is what the server has. (The answer's
  // other fields may be older than what events said since: another tab's save that came
  // while this one was on its way was undone on the page.)
  const save = async (changes) => {
    setChat((c) => ({ ...c, session: withChanges(c.session, changes) }));
    const request = client.updateSession(sessionId, changes);
    const entry = { changes, settled: request.catch(() => undefined) }; // (failure: said below)
    saving.current = [...saving.current, entry];
    const saved = await act(async () => {
      const { session } = await request.finally(() => {
        saving.current = saving.current.filter((e) => e !== entry);
      });
      // (the saves still on their way after this one show over its answer)
      setChat((c) => {
        const answer = withChanges(c.session, answered(changes, session));
        return { ...c, session: pendingOver(answer) };
      });
    });
    if (!saved) setGeneration((n) => n + 1);
    return saved;
  };
  // What was saved before a message counts for it.
  const afterSaves = () => Promise.all(saving.current.map((e) => e.settled));

  const record = chat.session;
  // (AutoChat between two turns too: Stop ends it, and the chat is not to be changed)
  const running = chat.busy || chat.autochatActive || chat.approvals.length > 0;
  const model = record.settings?.model || offer.defaultModel || "";
  const mine = lastWritten(chat.messages);

  return (
    <section className="chat" aria-label="Chat">
      <header>
        <Title title={record.title} rename={(title) => save({ title })} />
        <span
          className={`badge state-${chat.state}`}
          role="status"
          aria-label="State"
          data-state={chat.state}
        >
          {badgeWords(chat)}
        </span>
      </header>
      <p className="hint">{usageLine(record.usage)}</p>
      {notice && <p className="notice" role="status">{notice}</p>}
      <div className="controls">
        <label>
          Agent role
          <select
            aria-label="Agent role"
            value={record.agent}
            onChange={(e) => save({ agent: e.target.value })}
          >
            {offer.agents.map((name) => (
              <option key={name} value={name}>{roleTitle(name)}</option>
            ))}
          </select>
        </label>
        <label>
          Model
          <select aria-label="Model" value={model} onChange={(e) => save({ model: e.target.value })}>
            {offer.models.map((name) => (
              <option key={name} value={name}>{name}</option>
            ))}
          </select>
        </label>
      </div>
      <AutoChatPanel record={record} save={save} note={chat.autochat} />
      <SettingsPanel record={record} save={save} />
      <MemoryPanel view={remembered} />
      <AllowedPanel
        allowed={chat.allowed}
        forget={() =>
          act(async () => {
            const answer = await client.forgetAllowedTools(sessionId);
            setChat((c) => ({ ...c, allowed: answer.allowed_tools }));
          })
        }
      />
      <ToolsPanel
        tools={tools}
        setMode={(name, mode) =>
          act(async () => {
            const tool = await client.setToolMode(sessionId, name, mode || null);
            setTools((list) => list.map((t) => (t.name === name ? tool : t)));
          })
        }
      />
      <div className="actions">
        <button type="button" disabled={!running} onClick={() => act(() => client.stop(sessionId))}>
          Stop
        </button>
        <button
          type="button"
          disabled={running || chat.messages.length === 0}
          onClick={() =>
            act(async () => {
              await afterSaves();
              await client.retry(sessionId);
            })
          }
        >
          Retry last turn
        </button>
        <button
          type="button"
          disabled={running || mine === null}
          onClick={() =>
            setEditing({ id: mine.id, text: mine.content, images: mine.images ?? [] })
          }
        >
          Edit last message
        </button>
        <button
          type="button"
          disabled={running || chat.messages.length === 0}
          onClick={() => {
            if (window.confirm("Empty this conversation? Its settings stay.")) {
              act(async () => {
                await client.clear(sessionId);
                setEditing(null); // (the message being edited is gone)
              });
            }
          }}
        >
          Clear chat
        </button>
        <button
          type="button"
          disabled={chat.messages.length === 0}
          onClick={() => act(async () => setWarning(await exportChat(client, api, sessionId, record.title)))}
        >
          Export chat
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
      {warning && <p role="alert" className="warning">{warning}</p>}
      {problem && <p role="alert" className="problem">{problem}</p>}
      {chat.problem && <p role="alert" className="problem">{chat.problem}</p>}
      <ol className="messages" aria-label="Conversation" aria-live="polite">
        {entries.map((entry) => (
          <Entry key={entry.key} entry={entry} running={chat.busy} />
        ))}
        {Object.values(chat.streaming).map((reply) => (
          <LiveEntry key={reply.id} reply={reply} />
        ))}
        {Object.values(chat.running).map((view) => (
          <RunningCall key={view.id} view={view} />
        ))}
        {chat.queued.map((waiting) => (
          <li key={waiting.id} className="entry user queued">
            <div className="text">{waiting.text}</div>
            <p className="note">Waiting: the agent reads this when its current step ends.</p>
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
      <Composer
        send={(text, images) =>
          act(async () => {
            await afterSaves();
            const answer = await client.sendMessage(sessionId, text, { images });
            if (answer.queued) setChat((c) => withQueued(c, answer.message_id, text));
          })
        }
        editing={editing}
        sendEdit={async (text, images) => {
          const done = await act(async () => {
            await afterSaves();
            await client.editLast(sessionId, text, { images, messageId: editing?.id });
          });
          if (done) setEditing(null);
          return done;
        }}
        cancelEdit={() => setEditing(null)}
      />
    </section>
  );
}

/** `changes` with the values the server's `session` answered for them. */
function answered(changes, session) {
  const pick = (from, names) => Object.fromEntries(names.map((name) => [name, from?.[name]]));
  const read = {};
  if (changes.agent !== undefined) read.agent = session.agent;
  if (changes.title !== undefined) read.title = session.title;
  if (changes.model !== undefined) read.model = session.settings?.model;
  if (changes.settings) read.settings = pick(session.settings, Object.keys(changes.settings));
  if (changes.autochat) read.autochat = pick(session.autochat, Object.keys(changes.autochat));
  return read;
}

/** The session record with a PATCH's `changes` applied, as the server will have it. */
function withChanges(session, changes) {
  const next = { ...session };
  if (changes.agent !== undefined) next.agent = changes.agent;
  if (changes.title !== undefined) next.title = changes.title;
  if (changes.model !== undefined) next.settings = { ...next.settings, model: changes.model };
  if (changes.settings) next.settings = { ...next.settings, ...changes.settings };
  if (changes.autochat) next.autochat = { ...next.autochat, ...changes.autochat };
  return next;
}
