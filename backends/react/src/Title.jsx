// The chat's title, with Rename: Enter (or Save) saves it, Escape leaves it as it was. An
// empty title leaves the chat untitled; other tabs' lists follow (the chats-list stream).
import { useState } from "react";

export function Title({ title, rename }) {
  const [draft, setDraft] = useState(null); // the title being typed, or null
  if (draft === null) {
    return (
      <>
        <h2>{title || "Untitled chat"}</h2>
        <button type="button" className="quiet" onClick={() => setDraft(title)}>Rename</button>
      </>
    );
  }
  const save = async () => {
    if (await rename(draft.trim())) setDraft(null);
  };
  return (
    <form
      className="rename"
      onSubmit={(e) => {
        e.preventDefault();
        save();
      }}
    >
      <input
        aria-label="Chat title"
        value={draft}
        maxLength={200}
        autoFocus
        onChange={(e) => setDraft(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === "Escape") setDraft(null);
        }}
      />
      <button type="submit" className="primary">Save</button>
      <button type="button" onClick={() => setDraft(null)}>Cancel</button>
    </form>
  );
}
