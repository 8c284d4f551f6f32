// Which crew member writes a reply (gui_agent/agents/crew.py), as the React front end says
// it: the history's entries (history.js's `entriesOf`) and a reply being written (its
// `crewLive`). Pure, without React.

/** The crew's name as people read it (history.js's role titles use it too). */
export const CREW_TITLE = "Crew";

/** The label a crew member's replies show under: the crew and the member's name ("Crew ·
 * reviewer"), not the role its calls are made as (the reviewer's is THOUGHT, which read as
 * the Thought role); "Crew" for a member not known yet (""). The same words as the other
 * front ends (gui_agent/wording.py's crew_title): keep them alike. */
export function crewTitle(member) {
  return member && member.trim() ? `${CREW_TITLE} · ${member}` : CREW_TITLE;
}

// How it is told: as the chat shows it (the Gradio page's backends/gradio/crew_voices.py, as
// far as the history tells it). A crew's members make their model calls as roles (the
// default crew's doer as AGENT_EXECUTOR, its reviewer as THOUGHT). A reply a member writes
// is marked with its name (`crew_speaker`, and its `message_started` says it: `speaker`),
// one a Stop or an error ended too; a chat kept before that, or imported, may hold unmarked
// ones. While the crew's turn runs (one begun after a switch to the crew, or one a hand-over
// or a marked reply shows), such a reply is the member last seen speaking as its role (the
// hand-over before it names who goes on); after a message that starts a turn, the first to
// answer is the member that answered first last time. A switch to another role, kept by the
// message that starts the next turn (`switched`), makes the replies after it that role's
// again.
const CREW = "CREW";

// Metadata marks of messages an agent writes to another (a plan step, a crew hand-over, a
// supervisor's task and the worker's steps): not the person's.
export const HANDOVER_MARKS = ["plan_step", "crew_member", "delegated_by"];
export const CREW_SPEAKER = "crew_speaker";

/** What `crewSeen` knows before the first of `messages`: the crew speaks if the chat's
 * first switch was away from the crew, or (a chat with no switch ran as one role) if a
 * hand-over or a member's reply shows it; null when nothing says. */
export function crewVoices(messages) {
  const first = messages.find((m) => isSwitch(m.metadata?.switched))?.metadata.switched;
  const crew = first ? first.from_agent === CREW : messages.some(crewShown) || null;
  return { crew, names: {}, first: null, opening: false };
}

function crewShown(message) {
  const meta = message.metadata ?? {};
  return Boolean((message.role === "user" && meta.crew_agent) || meta[CREW_SPEAKER]);
}

function isSwitch(switched) {
  return typeof switched === "object" && switched !== null && typeof switched.to_agent === "string";
}

/** Follow one message of the history in `voices`, and give the crew member who wrote it: null
 * for a message of no crew member's, "" for a member not known yet. */
export function crewSeen(voices, message) {
  const meta = message.metadata ?? {};
  if (message.role === "user") {
    const [name, agent] = [meta.crew_member, meta.crew_agent];
    if (typeof name === "string" && name.trim() && typeof agent === "string") {
      voices.names[agent] = name; // a hand-over names who goes on
      voices.crew = true;
    } else if (!HANDOVER_MARKS.some((mark) => meta[mark])) {
      // a turn starts, as the role last switched to
      if (isSwitch(meta.switched)) voices.crew = meta.switched.to_agent === CREW;
      if (voices.first) voices.names[voices.first.agent] = voices.first.name;
      voices.opening = true;
    }
    return null;
  }
  if (message.role !== "assistant" || !message.agent) return null;
  const writer = meta[CREW_SPEAKER];
  if (typeof writer !== "string" || !writer.trim()) return crewMember(voices, message.agent);
  voices.names[message.agent] = writer;
  voices.crew = true;
  if (voices.opening) {
    voices.first = { agent: message.agent, name: writer };
    voices.opening = false;
  }
  return writer;
}

/** The member writing a reply made as `agent` that does not say who wrote it (see
 * `crewSeen`). */
function crewMember(voices, agent) {
  return voices.crew ? (voices.names[agent] ?? "") : null;
}

/** A reply being written as `live.agent`, after `messages`, with its label (`speaker`) when
 * it is a crew member's ("Crew · reviewer"); without one, its role's is shown (`liveTitle`).
 * The server names the member writing it (`speaker`: the `message_started`'s, or the
 * `crew_speaker` of a reply given mid-stream); one it does not name is a crew member's only
 * as far as the history tells (the member last seen speaking as its role while the crew's
 * turn runs). Not by the chat's role now: a role picked while a turn runs is for the turns
 * after it, and would relabel the reply being written. */
export function crewLive(live, messages, speaker = null) {
  if (typeof speaker === "string" && speaker.trim()) {
    return { ...live, speaker: crewTitle(speaker) };
  }
  if (!live.agent) return live;
  const voices = crewVoices(messages);
  for (const message of messages) crewSeen(voices, message);
  const member = crewMember(voices, live.agent);
  return member === null ? live : { ...live, speaker: crewTitle(member) };
}

