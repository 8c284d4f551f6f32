// One chat bubble: who speaks, the text (shown as written: React escapes it), code and
// console output, pictures (only those the chat holds; one named by address is not loaded),
// the tool calls with their results, and notes. A reply being written is drawn the same way,
// and a tool call running now as a terminal pane that grows with what it prints.
import { memo, useLayoutEffect, useRef } from "react";
import { hiddenLine, imageSource, liveTitle, overwritten } from "./history.js";

export const Entry = memo(function Entry({ entry, running }) {
  return (
    <li className={`entry ${entry.role}`}>
      {entry.speaker && <p className="speaker">{entry.speaker}</p>}
      <Reasoning text={entry.reasoning} />
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
            {callState(call, running)}
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
});

export function LiveEntry({ reply }) {
  const speaker = liveTitle(reply);
  return (
    <li className="entry assistant writing">
      {speaker && <p className="speaker">{speaker}</p>}
      <Reasoning text={reply.reasoning} />
      {reply.retrying && !reply.text ? (
        <p className="note retrying" role="status">{reply.retrying}</p>
      ) : (
        <div className="text">{reply.text || "…"}</div>
      )}
    </li>
  );
}

/** A tool call running now: its name, then what it has printed so far (the latest part, with
 * how much older output is not shown), kept scrolled to the end unless the person scrolled
 * up to read. Its result, once in, is shown with its call instead. */
export function RunningCall({ view }) {
  const pane = useRef(null);
  const following = useRef(true); // at the end: stay there as the output grows
  useLayoutEffect(() => {
    const box = pane.current;
    if (box && following.current) box.scrollTop = box.scrollHeight;
  }, [view.text]);
  return (
    <li
      className="entry assistant running-call"
      data-call-id={view.id}
      aria-label={`${view.name} (running)`}
    >
      <p className="speaker">
        <span className="call-name">{view.name}</span> (running)
      </p>
      {view.hidden > 0 && <p className="note live-hidden">{hiddenLine(view.hidden)}</p>}
      {view.text ? (
        <pre
          ref={pane}
          className="live-output"
          aria-label={`Output of ${view.name} so far`}
          aria-live="polite"
          tabIndex={0}
          onScroll={(e) => {
            const box = e.currentTarget;
            following.current = box.scrollHeight - box.scrollTop - box.clientHeight < 16;
          }}
        >
          {overwritten(view.text)}
        </pre>
      ) : (
        <p className="note">No output yet.</p>
      )}
    </li>
  );
}

function Reasoning({ text }) {
  if (!text) return null;
  return (
    <details>
      <summary>Reasoning</summary>
      <pre>{text}</pre>
    </details>
  );
}

function callState(call, running) {
  if (call.result === null) return running ? " (running)" : " (no result)";
  return call.isError ? " (error)" : "";
}
