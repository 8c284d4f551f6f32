// The message box: Enter sends, Shift+Enter adds a line; pictures can be attached. When the
// person edits their last message, it comes back here with its pictures, and Send replaces
// it (the reply to it is written again). What the server refuses stays in the box.
import { useEffect, useRef, useState } from "react";

const PICTURE_TYPES = "image/png,image/jpeg,image/gif,image/webp";

export function Composer({ send, editing, sendEdit, cancelEdit }) {
  const [text, setText] = useState("");
  const [pictures, setPictures] = useState([]); // {name, media_type, data}
  const [sending, setSending] = useState(false); // (drawn: the Send button disabled)
  // Set at once, not at the next render: two Enters in one step of the page's script both
  // see `sending` false, and the second would send the message again.
  const inFlight = useRef(false);
  const [problem, setProblem] = useState(null);
  const box = useRef(null);

  useEffect(() => {
    if (!editing) return;
    setText(editing.text);
    setPictures(editing.images.map((image, i) => ({ name: `picture ${i + 1}`, ...image })));
    box.current?.focus();
  }, [editing]);

  async function attach(files) {
    setProblem(null);
    try {
      const read = await Promise.all([...files].map(readPicture));
      setPictures((now) => [...now, ...read]);
    } catch (error) {
      setProblem(error.message);
    }
  }

  async function submit() {
    if ((!text.trim() && pictures.length === 0) || inFlight.current) return;
    inFlight.current = true;
    setSending(true);
    const images = pictures.map(({ media_type, data }) => ({ media_type, data }));
    let sent = false;
    try {
      sent = editing ? await sendEdit(text, images) : await send(text, images);
    } finally {
      inFlight.current = false;
      setSending(false);
    }
    if (sent) {
      setText("");
      setPictures([]);
    }
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
      {editing && (
        <p className="hint">
          Editing your last message: Send replaces it and its reply.{" "}
          <button
            type="button"
            onClick={() => {
              cancelEdit();
              setText("");
              setPictures([]);
            }}
          >
            Cancel edit
          </button>
        </p>
      )}
      {pictures.length > 0 && (
        <ul className="pictures" aria-label="Attached pictures">
          {pictures.map((picture, i) => (
            <li key={i}>
              {picture.name}{" "}
              <button
                type="button"
                aria-label={`Remove ${picture.name}`}
                onClick={() => setPictures((now) => now.filter((_, j) => j !== i))}
              >
                ×
              </button>
            </li>
          ))}
        </ul>
      )}
      {problem && <p role="alert" className="problem">{problem}</p>}
      <div className="row">
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
        <label className="attach">
          Attach pictures
          <input
            type="file"
            accept={PICTURE_TYPES}
            multiple
            onChange={(e) => {
              attach(e.target.files);
              e.target.value = ""; // the same file can be attached again
            }}
          />
        </label>
        <button type="submit" className="primary" disabled={sending}>
          {editing ? "Send edited" : "Send"}
        </button>
      </div>
    </form>
  );
}

function readPicture(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => {
      const url = String(reader.result);
      resolve({ name: file.name, media_type: file.type || "image/png", data: url.slice(url.indexOf(",") + 1) });
    };
    reader.onerror = () => reject(new Error(`Could not read ${file.name}.`));
    reader.readAsDataURL(file);
  });
}
