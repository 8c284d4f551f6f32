// The chat's AutoChat (its switch, its limits, what it is doing) and its settings, as the
// server has them. A box shows the session record as it is now (session_updated events keep
// it current, so what another tab saves shows here), except while the person has typed in it
// and not saved; a save sends only those boxes, so it never undoes what another tab saved in
// a box not touched here. A change being saved (the switch) shows until its save is answered
// (Chat.jsx). An empty box means the default (the model's, or none), and a value
// the server refuses is said in its words, naming the field.
import { useState } from "react";
import { AUTOCHAT_STILL_ON } from "./history.js";

/** A box's text as the API takes it: empty is null, a number is a number, and anything else
 * is sent as typed, for the server to name the field it refuses. */
function valueOf(text) {
  const trimmed = String(text).trim();
  if (trimmed === "") return null;
  const number = Number(trimmed);
  return Number.isNaN(number) ? trimmed : number;
}

const shown = (value) => (value === null || value === undefined ? "" : String(value));

/** What the person typed in a form's boxes and has not saved yet, by field: `edit` records a
 * box's text, and `saved(sent)`, once the save of `sent` went through, lets each box sent
 * follow the record again (unless typed in since). */
function useEdits() {
  const [edits, setEdits] = useState({});
  const edit = (name, text) => setEdits((now) => ({ ...now, [name]: text }));
  const saved = (sent) =>
    setEdits((now) => Object.fromEntries(Object.entries(now).filter(([name, text]) => sent[name] !== text)));
  return [edits, edit, saved];
}

/** The boxes typed in, as the API takes them: each through `convert[name]`. */
const changesOf = (edits, convert) =>
  Object.fromEntries(Object.entries(edits).map(([name, text]) => [name, convert[name](text)]));

// How each limit's box is sent: no delay is 0, and a budget of 0 is none.
const LIMITS = {
  max_turns: valueOf,
  delay_s: (text) => valueOf(text) ?? 0,
  token_budget: (text) => valueOf(text) || null,
  time_budget_s: (text) => valueOf(text) || null,
};

// How each setting's box is sent: the system prompt as typed, the others as numbers.
const SETTINGS = {
  system_prompt: (text) => text,
  temperature: valueOf,
  max_tokens: valueOf,
  max_iterations: valueOf,
  memory_exchanges: valueOf,
  memory_token_budget: valueOf,
  approval_timeout_s: valueOf,
};

export function AutoChatPanel({ record, save, note }) {
  const settings = record.autochat ?? {};
  const [edits, edit, saved] = useEdits();
  const limits = {
    max_turns: shown(settings.max_turns),
    delay_s: shown(settings.delay_s),
    token_budget: shown(settings.token_budget ?? 0),
    time_budget_s: shown(settings.time_budget_s ?? 0),
    ...edits,
  };
  const field = (name, label) => (
    <label>
      {label}
      <input inputMode="decimal" value={limits[name]} onChange={(e) => edit(name, e.target.value)} />
    </label>
  );
  return (
    <details className="panel">
      <summary>AutoChat</summary>
      <label className="switch">
        <input
          type="checkbox"
          checked={Boolean(settings.enabled)}
          onChange={(e) => save({ autochat: { enabled: e.target.checked } })}
        />
        AutoChat: keep working on its own
      </label>
      <p className="hint">
        {settings.enabled
          ? `AutoChat is on: up to ${settings.max_turns} automatic turns.`
          : "AutoChat is off."}
      </p>
      {note && (
        <p className="note">
          {settings.enabled && note.startsWith("AutoChat stopped") ? `${note} ${AUTOCHAT_STILL_ON}` : note}
        </p>
      )}
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          const sent = edits;
          if (Object.keys(sent).length === 0) return; // nothing typed: nothing to change
          if (await save({ autochat: changesOf(sent, LIMITS) })) saved(sent);
        }}
      >
        <div className="grid">
          {field("max_turns", "Max automatic turns")}
          {field("delay_s", "Delay between turns (s)")}
          {field("token_budget", "Token budget (0 = none)")}
          {field("time_budget_s", "Time budget in s (0 = none)")}
        </div>
        <button type="submit">Save limits</button>
      </form>
    </details>
  );
}

export function SettingsPanel({ record, save }) {
  const now = record.settings ?? {};
  const [edits, edit, saved] = useEdits();
  const form = {
    ...Object.fromEntries(Object.keys(SETTINGS).map((name) => [name, shown(now[name])])),
    ...edits,
  };
  const field = (name, label) => (
    <label>
      {label}
      <input inputMode="decimal" value={form[name]} onChange={(e) => edit(name, e.target.value)} />
    </label>
  );
  return (
    <details className="panel">
      <summary>Settings</summary>
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          const sent = edits;
          if (Object.keys(sent).length === 0) return; // nothing typed: nothing to change
          if (await save({ settings: changesOf(sent, SETTINGS) })) saved(sent);
        }}
      >
        <label>
          System prompt
          <textarea
            value={form.system_prompt}
            onChange={(e) => edit("system_prompt", e.target.value)}
          />
        </label>
        <div className="grid">
          {field("temperature", "Temperature (empty: the model's)")}
          {field("max_tokens", "Max tokens (empty: the model's)")}
          {field("max_iterations", "Max steps per turn")}
          {field("memory_exchanges", "Exchanges remembered")}
          {field("memory_token_budget", "Memory token budget (empty: none)")}
          {field("approval_timeout_s", "Approval timeout in s (empty: waits for ever)")}
        </div>
        <button type="submit">Save settings</button>
      </form>
    </details>
  );
}

/** What the agent remembers: the memory window the model is sent (`memoryView`). */
export function MemoryPanel({ view }) {
  return (
    <details className="panel">
      <summary>Memory</summary>
      {view === null ? (
        <p className="hint">Context window: empty (no messages yet).</p>
      ) : (
        <>
          <p>{view.summary}</p>
          {view.dropped && <p className="hint">{view.dropped}</p>}
          <p className="hint">{view.goal}</p>
          <ol className="window" aria-label="Context window">
            {view.items.map((item) => (
              <li key={item.id}>
                <em>{item.role}</em>: {item.text || "…"}
              </li>
            ))}
          </ol>
        </>
      )}
    </details>
  );
}

/** The tools the person allowed for this chat (ALLOW_FOR_THIS_CHAT): they run without
 * asking until `forget` makes every one of them ask again. */
export function AllowedPanel({ allowed, forget }) {
  return (
    <details className="panel" open>
      <summary>Allowed tools</summary>
      {allowed.length === 0 ? (
        <p className="hint">None: a tool that changes things asks you first.</p>
      ) : (
        <>
          <p aria-label="Allowed tools">
            {allowed.join(", ")}: {allowed.length === 1 ? "runs" : "run"} without asking in this chat.
          </p>
          <button type="button" onClick={forget}>Ask before every tool again</button>
        </>
      )}
    </details>
  );
}

const MODE_WORDS = { ask: "asks you first", allow: "runs without asking", deny: "never runs" };

/** What a call of a tool does, and why when it is not the app's own choice. */
export function toolModeWords(tool) {
  const words = MODE_WORDS[tool.mode] ?? tool.mode;
  if (tool.chosen && tool.chosen === tool.mode) return `${words} (set for this chat)`;
  if (tool.allowed_for_session && tool.mode === "allow") return `${words} (allowed for this chat)`;
  return words;
}

/** The chat's tools, each with what its calls do and a choice to change that. */
export function ToolsPanel({ tools, setMode }) {
  return (
    <details className="panel">
      <summary>Tools</summary>
      <ul className="tools" aria-label="Tools">
        {tools.map((tool) => (
          <li key={tool.name}>
            <label>
              {tool.name}: <span className="hint">{toolModeWords(tool)}</span>
              <select
                aria-label={`When the agent calls ${tool.name}`}
                value={tool.chosen ?? ""}
                onChange={(e) => setMode(tool.name, e.target.value)}
              >
                <option value="">As the app decides</option>
                <option value="ask">Ask me first</option>
                <option value="allow">Run without asking</option>
                <option value="deny">Never run</option>
              </select>
            </label>
          </li>
        ))}
      </ul>
    </details>
  );
}
