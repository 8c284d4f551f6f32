// What the React front end shows of a chat, without React: the history as entries (each tool
// result folded into the call that asked for it, as on the Gradio page), and a chat's live
// state kept up to date by its events (`applyEvent`), so the page never reloads the history
// while a turn runs.

import {
  CREW_SPEAKER,
  CREW_TITLE,
  HANDOVER_MARKS,
  crewLive,
  crewSeen,
  crewTitle,
  crewVoices,
} from "./crew.js";

export { crewTitle };

const ROLE_TITLES = {
  AGENT_EXECUTOR: "Executor",
  LLM_PLANNER: "Planner",
  SUPERVISOR: "Supervisor",
  THOUGHT: "Thought",
  CREW: CREW_TITLE,
  OTHER: "Other",
};

/** What the state badge says in each state: plain words, as the chat page says them (STOP
 * beside a red Stop button read as a command; INIT is jargon). The state's name stays in the
 * badge's `data-state`. */
export const STATE_WORDS = {
  INIT: "Ready",
  RUNNING: "Working…",
  WAITING: "Waiting for your approval",
  STOP: "Your turn",
};

/** What the badge says while AutoChat waits between two turns: the state is STOP, yet a
 * turn is coming ("Your turn" then read as if nothing more would happen). The same words as
 * the other front ends (gui_agent/wording.py's AUTOCHAT_BETWEEN_TURNS): keep them alike. */
export const BETWEEN_TURNS = "AutoChat: next turn soon";

/** The state badge's words for `state` (its name, for one this page does not know). */
export function stateWords(state) {
  return STATE_WORDS[state] ?? String(state);
}

/** The state badge's words for the chat: its state's, or BETWEEN_TURNS while AutoChat
 * waits to start its next turn. */
export function badgeWords(chat) {
  return chat.state === "STOP" && chat.autochatActive ? BETWEEN_TURNS : stateWords(chat.state);
}

/** The approval choice that lets a tool run without asking for the rest of the chat (its
 * decision keeps the API's name, "allow_session"): people see chats, not sessions. */
export const ALLOW_FOR_THIS_CHAT = "Allow for this chat";

// What an approval decided, as the chat says it: its mark and words, not its code. The same
// words as the other front ends (gui_agent/wording.py's decision_words): keep them alike.
const DECISION_WORDS = {
  allow_once: ["✓", "Allowed once"],
  allow_session: ["✓", "Allowed for this chat"],
  deny: ["✗", "Denied"],
};

/** A confirmation message (what an approval decided) as people read it: "✓ Allowed for
 * this chat · Run Python code (go ahead)", and who answered when it was not the person
 * (gui_agent/wording.py's confirmation_words). The message keeps the decision's code. */
export function confirmationWords(content, decision, by) {
  const [mark, words] = DECISION_WORDS[decision] ?? ["•", "Approval"];
  const text = decision ? content.replace(`: ${decision}`, "") : content;
  const who = by && by !== "user" ? ` (by ${by})` : "";
  return `${mark} ${words} · ${text}${who}`;
}

/** A role's name as people read it ("LLM_PLANNER" -> "Planner"). */
export function roleTitle(name) {
  return ROLE_TITLES[name] ?? String(name ?? "");
}

/** A call's JSON arguments indented, or as sent when they are not JSON. */
export function prettyArguments(text) {
  try {
    return JSON.stringify(JSON.parse(text || "{}"), null, 2);
  } catch {
    return text;
  }
}

/** Under a message of the person's that a Stop left unanswered (metadata `unanswered`:
 * queued behind the stopped turn, or sent just before it began). */
export const UNANSWERED_NOTE =
  "Not answered: the turn it waited for was stopped before the agent read it. " +
  "Send it again to have it answered.";

/** Under a reply the provider's content filter stopped, or the model refused (metadata
 * `filtered`): it may be cut short or empty, with no other word why. */
export const FILTERED_NOTE =
  "Stopped by the provider's content filter (or the model declined): what it wrote before " +
  "is kept. Rephrase the request, or pick another model.";

function notesOf(message) {
  const notes = [];
  if (message.status === "interrupted") notes.push("Interrupted: the turn was stopped here.");
  else if (message.status === "error") notes.push("This reply ended with an error.");
  if (message.metadata?.cut_off) {
    notes.push('Cut off at the output limit (Max tokens): say "continue" for the rest.');
  }
  if (message.metadata?.filtered === true) notes.push(FILTERED_NOTE);
  if (message.metadata?.unanswered === true) notes.push(UNANSWERED_NOTE);
  return notes;
}

/** The history as chat entries: {key, role, speaker, kind, text, reasoning, images, calls,
 * notes}; a call is {id, name, arguments, result, isError}, its result null until it has
 * one. SYSTEM messages are instructions, not conversation, and are left out. */
export function entriesOf(messages) {
  const entries = [];
  const calls = new Map();
  const voices = crewVoices(messages);
  for (const message of messages) {
    if (message.role === "tool") {
      const call = calls.get(message.tool_call_id ?? "");
      if (call) {
        call.result = message.content;
        call.isError = Boolean(message.metadata?.is_error);
      } else {
        entries.push(plain(message, "assistant", message.content));
      }
      continue;
    }
    // A worker's steps are display-only too, but they are the conversation: shown whole.
    const meta = message.metadata ?? {};
    if (message.type === "confirmation" || (meta.display_only && !meta.delegated_by)) {
      // (a turn that failed before it wrote a reply keeps its error in an empty note)
      const failed = meta.error?.message ? `Error: ${meta.error.message}` : "";
      const decided = message.type === "confirmation" && typeof meta.decision === "string";
      const note = decided
        ? confirmationWords(message.content.trim(), meta.decision, meta.by)
        : message.content.trim() || failed || message.type;
      const last = entries[entries.length - 1];
      if (last && last.role === "assistant") last.notes.push(note);
      else entries.push({ ...plain(message, "assistant", ""), notes: [note] });
      continue;
    }
    if (message.role === "system") continue;
    const member = crewSeen(voices, message);
    const role = message.role === "user" ? "user" : "assistant";
    const entry = plain(message, role, message.content, member);
    entry.notes = notesOf(message);
    for (const call of message.tool_calls ?? []) {
      const view = {
        id: call.id,
        name: call.name,
        arguments: prettyArguments(call.arguments),
        result: null,
        isError: false,
      };
      calls.set(call.id, view);
      entry.calls.push(view);
    }
    entries.push(entry);
  }
  return entries;
}

/** Who wrote it: the role of an agent's message, or the crew member (`member`: "" for one
 * not known yet, null for a message of no crew member's: `crewSeen`); for a user message the
 * app or an agent wrote, which (as the Gradio page labels it). */
function speakerOf(message, member = null) {
  if (message.role !== "user") {
    if (member !== null) return crewTitle(member);
    return message.agent ? roleTitle(message.agent) : "";
  }
  const meta = message.metadata ?? {};
  if (meta.delegated_by) return `Task for ${roleTitle(meta.worker ?? "a worker")}`;
  if (meta.crew_member) return `Crew, over to the ${meta.crew_member}`;
  if (meta.autochat) return meta.autochat_turn ? `AutoChat turn ${meta.autochat_turn}` : "AutoChat";
  if (meta.plan_step) return `Plan step ${meta.plan_step}/${meta.plan_steps ?? "?"}`;
  return "";
}

function plain(message, role, text, member = null) {
  return {
    key: message.id,
    role,
    speaker: speakerOf(message, member),
    kind: message.type,
    language: message.language ?? null,
    text,
    reasoning: message.reasoning ?? "",
    images: message.images ?? [],
    calls: [],
    notes: [],
  };
}

/** Who a reply being written is from, as its bubble says it: the crew member (`crewLive`),
 * else its role ("" for neither). */
export function liveTitle(reply) {
  return reply.speaker ?? (reply.agent ? roleTitle(reply.agent) : "");
}

/** An image's data URL, or null for one given by address: the page fetches no picture a
 * model, a tool or an imported chat names (it would tell that address who reads the chat). */
export function imageSource(image) {
  if (!image.data) return null;
  return `data:${image.media_type || "image/png"};base64,${image.data}`;
}

/** A chat as the page holds it: the session's record, its messages, replies being written,
 * approvals waiting, its state, and the last problem to show. */
export function chatFrom(detail) {
  return {
    session: detail.session,
    messages: detail.messages,
    streaming: Object.fromEntries(detail.streaming.map((m) => [m.id, liveFrom(m, detail)])),
    approvals: detail.pending_approvals,
    state: detail.state,
    // A turn runs (its state is, as each `state_changed` says it from here on): the detail's
    // `busy` is also true while AutoChat waits between turns, which `autochatActive` says,
    // and no event would say that wait's end when a Stop ends it.
    busy: turnRuns(detail.state),
    problem: null,
    autochat: null,
    // An AutoChat run is going on (from the person's message until it stops): between two
    // of its turns the state is STOP, yet a turn is coming and Stop has AutoChat to end.
    autochatActive: Boolean(detail.autochat_active),
    stale: false,
    // {id, text}: messages sent while a turn ran, until the agent takes them (also those sent
    // before the page opened the chat: a reload, another tab)
    queued: (detail.queued ?? []).map((m) => ({ id: m.id, text: m.content })),
    memory: null, // the memory window (GET .../memory, then each memory_updated event)
    allowed: detail.allowed_tools ?? [], // tools allowed for the session: run without asking
    // call id -> {id, name, text, hidden}: tool calls running now, with what they printed
    // so far (`tool_call_output`), until their `tool_call_finished` (see `liveOutput`);
    // those running when the page opened the chat come with what they printed by then
    running: runningCalls(detail),
  };
}

/** Whether a turn runs in `state` (it is RUNNING, or WAITING for an approval). */
function turnRuns(state) {
  return state !== "STOP" && state !== "INIT";
}

/** The calls running as the detail (or a stream's hello) gives them, each one
 * `tool_call_output` holding what it printed up to `last_seq`. */
function runningCalls(detail) {
  const running = {};
  for (const printed of detail.running_calls ?? []) {
    const view = runningFrom(detail.messages, printed.call_id);
    if (view) running[view.id] = liveOutput(view, printed);
  }
  return running;
}

/** A reply being written as the detail (or a stream's hello) gives it: the crew member who
 * writes it (`crewLive`), its text so far, and why it has not begun when its model is asked again
 * (`retrying`, the wait left). The notice came before the detail's `last_seq`, so no event
 * from there on says it again. */
function liveFrom(message, detail) {
  const text = message.content;
  const reasoning = message.reasoning ?? "";
  const written = { id: message.id, agent: message.agent, text, reasoning };
  const speaker = message.metadata?.[CREW_SPEAKER];
  const live = crewLive(written, detail.messages, speaker);
  if (message.retrying && !text && !reasoning) live.retrying = retryWords(message.retrying);
  return live;
}

/** What the memory panel says: the window's size, what slid out, the goal, and each
 * message in it (its role and the start of its text, from the history). */
export function memoryView(memory, messages) {
  if (!memory) return null;
  const plural = (n, noun) => `${n.toLocaleString("en-US")} ${noun}${n === 1 ? "" : "s"}`;
  const estimated = memory.token_estimated ? " (estimated)" : "";
  const byId = new Map(messages.map((m) => [m.id, m]));
  return {
    summary: `Context window: ${plural(memory.message_ids.length, "message")}, ${plural(memory.token_count, "token")}${estimated}.`,
    dropped: memory.dropped ? `${plural(memory.dropped, "older message")} slid out of the window.` : null,
    goal: memory.goal
      ? `Goal (${memory.goal_pinned ? "pinned (re-inserted)" : "in the window"}): ${memory.goal}`
      : "Goal: none pinned.",
    items: memory.message_ids.map((id) => {
      const message = byId.get(id);
      const text = message ? message.content.replace(/\s+/g, " ").trim() : "";
      return { id, role: message ? message.role : "?", text: text.length > 80 ? `${text.slice(0, 79)}…` : text };
    }),
  };
}

/** The chat with a message the server queued behind the running turn (unless it was taken
 * in already: its event can come before the answer to the request that sent it). */
export function withQueued(chat, id, text) {
  if (chat.messages.some((m) => m.id === id) || chat.queued.some((q) => q.id === id)) return chat;
  return { ...chat, queued: [...chat.queued, { id, text }] };
}

/** The person's own last message (not AutoChat's, not a hand-over): what Edit changes. */
export function lastWritten(messages) {
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const m = messages[i];
    const meta = m.metadata ?? {};
    if (m.role === "user" && !meta.autochat && !HANDOVER_MARKS.some((mark) => meta[mark])) {
      return m;
    }
  }
  return null;
}

/** The chat's tokens so far, in and out, and its model calls. */
export function usageLine(usage) {
  if (!usage?.requests) return "No model calls yet.";
  const calls = `${usage.requests} model call${usage.requests === 1 ? "" : "s"}`;
  const number = (n) => n.toLocaleString("en-US");
  return `Tokens so far: ${number(usage.input_tokens)} in · ${number(usage.output_tokens)} out · ${calls}${usage.estimated ? " (estimated)" : ""}`;
}

/** Why a reply has not begun: its model call is asked again (a `model_retrying` event).
 * The same words as the other front ends (gui_agent/retry_words.py): keep the two alike. */
export function retryWords(event) {
  const reason = event.reason.charAt(0).toUpperCase() + event.reason.slice(1);
  const seconds = event.wait_s;
  const wait = seconds >= 120 ? `${Math.ceil(seconds / 60)} min` : `${Math.max(1, Math.ceil(seconds))} s`;
  const when = seconds > 0 ? `in ${wait}` : "now";
  const count = event.attempt > 1 ? ` (attempt ${event.attempt} of ${event.max_attempts})` : "";
  return `${reason}: asking again ${when}${count}…`;
}

/** The most a running call's live output keeps on the page: its latest characters. */
export const LIVE_OUTPUT_CHARS = 8000;

/** The line above a running call's output when older output is not shown. */
export function hiddenLine(count) {
  return `… ${count.toLocaleString("en-US")} character${count === 1 ? "" : "s"} not shown …`;
}

/** Output as a terminal shows it after carriage returns: a line drawn again after a "\r" (a
 * progress bar) shows its last drawing only, not one line per frame; "\r\n" ends a line. */
export function overwritten(text) {
  if (!text.includes("\r")) return text;
  return text
    .split("\n")
    .map((line) => {
      const drawn = line.replace(/\r+$/, "");
      return drawn.slice(drawn.lastIndexOf("\r") + 1);
    })
    .join("\n");
}

/** A running call's view after one `tool_call_output`: its latest LIVE_OUTPUT_CHARS, and
 * how many characters came before them that are not shown. The server's `omitted` ones were
 * printed between the text shown and the new text: what was shown goes too, so everything
 * shown follows on without a gap and the "not shown" line above it is true. */
export function liveOutput(view, event) {
  const omitted = event.omitted ?? 0;
  let text = omitted > 0 ? event.text : view.text + event.text;
  let hidden = view.hidden + (omitted > 0 ? view.text.length + omitted : 0);
  if (text.length > LIVE_OUTPUT_CHARS) {
    hidden += text.length - LIVE_OUTPUT_CHARS;
    text = text.slice(-LIVE_OUTPUT_CHARS);
  }
  return { ...view, text, hidden };
}

/** The view of a running call this page did not see start (it opened the chat meanwhile: a
 * reload, another tab): named by the reply that made it, unless that call has its result. */
function runningFrom(messages, callId) {
  if (messages.some((m) => m.role === "tool" && m.tool_call_id === callId)) return null;
  for (let i = messages.length - 1; i >= 0; i -= 1) {
    const call = (messages[i].tool_calls ?? []).find((c) => c.id === callId);
    if (call) return { id: callId, name: call.name, text: "", hidden: 0 };
  }
  return { id: callId, name: "tool", text: "", hidden: 0 };
}

/** The chat after one event (a new object when anything changed, else the same one). */
export function applyEvent(chat, event) {
  switch (event.type) {
    case "state_changed": {
      const busy = turnRuns(event.to_state);
      // A turn that begins while AutoChat is switched on begins a run (the server's send
      // does), or is one of its turns: AutoChat goes on after it.
      const begun = event.to_state === "RUNNING" && Boolean(chat.session?.autochat?.enabled);
      return { ...chat, state: event.to_state, busy, autochatActive: chat.autochatActive || begun };
    }
    case "message_started": {
      const started = { id: event.message_id, agent: event.agent, text: "", reasoning: "" };
      const live = crewLive(started, chat.messages, event.speaker);
      return { ...chat, streaming: { ...chat.streaming, [event.message_id]: live } };
    }
    case "text_delta": {
      const live = chat.streaming[event.message_id];
      if (!live) return chat;
      const field = event.channel === "reasoning" ? "reasoning" : "text";
      const { retrying: _said, ...writing } = live; // (the model answers: the wait is over)
      const grown = { ...writing, [field]: live[field] + event.delta };
      return { ...chat, streaming: { ...chat.streaming, [event.message_id]: grown } };
    }
    case "model_retrying": {
      // Said with the reply being written until its text streams (or it is filed).
      const live = chat.streaming[event.message_id];
      if (!live || live.text) return chat;
      const waiting = { ...live, retrying: retryWords(event) };
      return { ...chat, streaming: { ...chat.streaming, [event.message_id]: waiting } };
    }
    case "message_completed": {
      const message = event.message;
      const { [message.id]: _done, ...streaming } = chat.streaming;
      const at = chat.messages.findIndex((m) => m.id === message.id);
      const messages =
        at === -1
          ? [...chat.messages, message]
          : chat.messages.map((m, i) => (i === at ? message : m));
      const queued = chat.queued.filter((q) => q.id !== message.id);
      return { ...chat, messages, streaming, queued };
    }
    case "tool_call_started": {
      const view = { id: event.call.id, name: event.call.name, text: "", hidden: 0 };
      return { ...chat, running: { ...chat.running, [view.id]: view } };
    }
    case "tool_call_output": {
      const view = chat.running[event.call_id] ?? runningFrom(chat.messages, event.call_id);
      if (!view) return chat;
      return { ...chat, running: { ...chat.running, [view.id]: liveOutput(view, event) } };
    }
    case "tool_call_finished": {
      // The result (in the history, with its call) takes the live view's place.
      if (!(event.result.call_id in chat.running)) return chat;
      const { [event.result.call_id]: _done, ...running } = chat.running;
      return { ...chat, running };
    }
    case "approval_requested":
      if (chat.approvals.some((a) => a.approval_id === event.approval_id)) return chat;
      return { ...chat, approvals: [...chat.approvals, event] };
    case "approval_resolved":
      return { ...chat, approvals: chat.approvals.filter((a) => a.approval_id !== event.approval_id) };
    case "session_updated": {
      const { history_length: length, allowed_tools: allowed, ...fields } = event.fields;
      const session = { ...chat.session, ...fields };
      // The history was cut (a retry, an edit or a clear, from any tab): read it again.
      const stale = chat.stale || length !== undefined;
      return { ...chat, session, stale, allowed: allowed ?? chat.allowed };
    }
    case "memory_updated": {
      const { message_ids, token_count, token_estimated, goal, goal_pinned, dropped } = event;
      return { ...chat, memory: { message_ids, token_count, token_estimated, goal, goal_pinned, dropped } };
    }
    case "usage":
      return { ...chat, session: { ...chat.session, usage: event.total } };
    case "error":
      return { ...chat, problem: event.message };
    case "run_finished":
      return { ...chat, streaming: {}, running: {} };
    case "autochat_turn": {
      const autochat = `AutoChat: automatic turn ${event.turn} of ${event.max_turns}.`;
      return { ...chat, autochat, autochatActive: true };
    }
    case "autochat_stopped":
      return { ...chat, autochat: autochatStopped(event), autochatActive: false };
    default:
      return chat;
  }
}

function autochatStopped(event) {
  const turns = `${event.turns} automatic turn${event.turns === 1 ? "" : "s"}`;
  const why = event.detail || String(event.reason).replaceAll("_", " ");
  const said = `AutoChat stopped after ${turns}: ${why}`;
  return /[.!?]$/.test(said) ? said : `${said}.`; // (a task summary ends its own sentence)
}

/** Said after why AutoChat stopped while its switch stays on (gui_agent/wording.py's
 * AUTOCHAT_STILL_ON: keep the two alike). */
export const AUTOCHAT_STILL_ON = "It is still switched on: your next message starts it again.";
