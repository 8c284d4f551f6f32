// Export the open chat to a file, import one as a new chat, or pick one to replay (Replay.jsx
// shows it). A chat too large to be imported back is exported all the same, with a warning
// saying why; an import says what it did, in the words the Gradio page uses.

const RESET_WORDS = {
  "settings.permissions": "the tools it allowed without asking (each asks you again)",
  "autochat.enabled": "AutoChat being on (switch it on again if you want it)",
};
const NOT_IMPORTABLE = ["too_large", "not_importable"]; // the export answer's codes for it
const API_HINT = "; add ?allow_unimportable=true"; // how the API's message goes on

const counted = (n, noun) => `${n.toLocaleString("en-US")} ${noun}${n === 1 ? "" : "s"}`;

/** What an import did: the messages it brought, what it did not carry over, what it
 * repaired so any model can continue the chat. */
export function importSummary(answer) {
  const said = [`Imported ${counted(answer.message_count, "message")} as a new chat.`];
  const reset = answer.reset.map((name) => RESET_WORDS[name] ?? name);
  if (reset.length) said.push(`For safety, an import does not carry over ${reset.join(" or ")}.`);
  const repairs = answer.repairs ?? {};
  const repaired = [];
  const one = (n, a, b) => (n === 1 ? a : b);
  if (repairs.orphan_results_dropped) {
    const n = repairs.orphan_results_dropped;
    repaired.push(`${counted(n, "tool result")} that answered no call ${one(n, "was", "were")} left out`);
  }
  if (repairs.unanswered_calls_answered) {
    const n = repairs.unanswered_calls_answered;
    repaired.push(
      `${counted(n, "tool call")} that had no result ` +
        one(
          n,
          "is marked unanswered (it may have run: check before running it again)",
          "are marked unanswered (they may have run: check before running them again)",
        ),
    );
  }
  if (repairs.system_messages_made_notes) {
    const n = repairs.system_messages_made_notes;
    repaired.push(`${counted(n, "system message")} ${one(n, "is", "are")} kept as a note, shown but never sent to the model`);
  }
  if (repaired.length) said.push(`Repaired so that any model can continue the chat: ${repaired.join("; ")}.`);
  return said.join(" ");
}

/** The name an export is saved under: letters and digits of the title, the time it was made. */
export function exportFileName(title, at = new Date()) {
  const slug =
    title
      .normalize("NFC")
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}]+/gu, "-")
      .replace(/^-+|-+$/g, "")
      .slice(0, 40)
      .replace(/-+$/g, "") || "chat";
  const pad = (n) => String(n).padStart(2, "0");
  const stamp =
    `${at.getUTCFullYear()}${pad(at.getUTCMonth() + 1)}${pad(at.getUTCDate())}-` +
    `${pad(at.getUTCHours())}${pad(at.getUTCMinutes())}${pad(at.getUTCSeconds())}`;
  return `gui-agent-${slug}-${stamp}.json`;
}

/** The chat's export, saved by the browser; resolves to a warning to show, or null. */
export async function exportChat(client, api, sessionId, title) {
  let file;
  let warning = null;
  try {
    file = await client.exportSession(sessionId);
  } catch (error) {
    if (!(error instanceof api.ApiError) || !NOT_IMPORTABLE.includes(error.code)) throw error;
    file = await client.exportSession(sessionId, { allowUnimportable: true });
    const why = error.message.split(API_HINT)[0];
    warning = `Exported, but this file cannot be imported back: ${why}. It holds the whole chat: keep it as a record.`;
  }
  const link = document.createElement("a");
  link.href = URL.createObjectURL(file);
  link.download = exportFileName(title);
  link.click();
  setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
  return warning;
}

/** A file picker for an export: `take(file)` does what the box is for; its failure is said
 * as `failed` followed by the reason. */
function ExportFileBox({ label, take, failed, onProblem }) {
  return (
    <label className="import">
      {label}
      <input
        type="file"
        accept="application/json,.json"
        onChange={async (e) => {
          const [file] = e.target.files;
          e.target.value = ""; // taken once: a refused file is not sent again by itself
          if (!file) return;
          try {
            await take(file);
          } catch (error) {
            onProblem(`${failed}: ${error.message}`);
          }
        }}
      />
    </label>
  );
}

export function ImportBox({ client, onImported, onProblem }) {
  return (
    <ExportFileBox
      label="Import a chat (an export file)"
      take={async (file) => onImported(await client.importSession(file))}
      failed="Could not import"
      onProblem={onProblem}
    />
  );
}

/** Replays an export step by step, as the chat went (the server reads the file; nothing is
 * saved): `onReplay` gets {title, message_count, events}. */
export function ReplayBox({ client, onReplay, onProblem }) {
  return (
    <ExportFileBox
      label="Replay a chat (an export file; nothing is saved)"
      take={async (file) => onReplay(await client.replayExport(file))}
      failed="Could not replay"
      onProblem={onProblem}
    />
  );
}
