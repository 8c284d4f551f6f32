// Export the open chat to a file, import one as a new chat, or pick one to replay (Replay.jsx
// shows it). A chat too large to be imported back is exported all the same, with a warning
// saying why; an import says what it did (the server's `summary`, the chat page's words).

const NOT_IMPORTABLE = ["too_large", "not_importable"]; // the export answer's codes for it
const API_HINT = "; add ?allow_unimportable=true"; // how the API's message goes on

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
