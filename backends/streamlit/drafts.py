"""Unsent text kept per chat in the Streamlit front end: what a person typed in one chat's
message box and did not send is back in that box when they open the chat again.

Streamlit's message box (`st.chat_input`) keeps what is typed in the browser only: the
script sees the text when it is sent, never before, and a box drawn for another chat (each
chat's box has a key of its own, `box_key`) starts empty. So the drafts are kept where the
text is, in the tab: a small script, drawn once per page (`keep_drafts`), notes each box's
text as it is typed, forgets it when it is sent (Enter, or the send button), and puts it
back when a box with that key is drawn again, empty. Nothing leaves the tab; a reload
forgets them, as it forgets the chat open.

The drafts belong to one sign-in: each box's key holds the sign-in's scope (a new one after
a sign-out, or when another person signs in on the tab, as `signing` clears what was kept
for the one before), so no box drawn after a sign-out can be given a draft from before it;
the script, drawn for a new scope, lets the old drafts go.
"""

from __future__ import annotations

import json
import secrets

import streamlit as st

__all__ = ["BOX_KEY_PREFIX", "box_key", "drafts_script", "keep_drafts"]

BOX_KEY_PREFIX = "message-"
"""The start of each message box's key (the class of its container, `st-key-message-...`,
is how the script finds the boxes and tells them apart)."""

_SCOPE_KEY = "drafts_scope"

_SCRIPT = """<script>
(() => {
  const scope = %(scope)s;
  const marker = %(marker)s;  // the class Streamlit gives a keyed widget's container
  let drafts = window.guiAgentDrafts;
  if (drafts === undefined) {
    drafts = window.guiAgentDrafts = { scope, text: new Map(), shown: new WeakMap() };
    const keyOf = (node) => {
      const holder = node.closest(`[class*="${marker}"]`);
      if (holder === null) return null;
      return [...holder.classList].find((name) => name.startsWith(marker)) ?? null;
    };
    const setText = Object.getOwnPropertyDescriptor(HTMLTextAreaElement.prototype, "value").set;
    const restore = () => {
      const boxes = document.querySelectorAll(
        `[class*="${marker}"] textarea[data-testid="stChatInputTextArea"]`);
      for (const box of boxes) {
        const key = keyOf(box);
        if (key === null || drafts.shown.get(box) === key) continue;
        drafts.shown.set(box, key);  // a box newly drawn with this key
        const text = drafts.text.get(key);
        if (text && box.value === "") {
          setText.call(box, text);  // as if typed: the box's own state takes it
          box.dispatchEvent(new Event("input", { bubbles: true }));
        }
      }
    };
    let pending = false;  // the page changes often (a reply streaming): one look per frame
    new MutationObserver(() => {
      if (pending) return;
      pending = true;
      requestAnimationFrame(() => { pending = false; restore(); });
    }).observe(document.body, { childList: true, subtree: true });
    document.addEventListener("input", (event) => {
      const box = event.target;
      if (!(box instanceof HTMLTextAreaElement)) return;
      const key = keyOf(box);
      if (key === null) return;
      if (box.value) drafts.text.set(key, box.value); else drafts.text.delete(key);
    }, true);
    const sent = (node) => {  // the box's text goes to the chat: it is no draft any more
      const key = keyOf(node);
      if (key !== null) drafts.text.delete(key);
    };
    document.addEventListener("keydown", (event) => {
      const box = event.target;
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing &&
          box instanceof HTMLTextAreaElement) sent(box);
    }, true);
    document.addEventListener("click", (event) => {
      const button = event.target instanceof Element &&
        event.target.closest('[data-testid="stChatInputSubmitButton"]');
      if (button) sent(button);
    }, true);
    restore();
  }
  if (drafts.scope !== scope) {  // another sign-in: the drafts before it are not its own
    drafts.scope = scope;
    drafts.text.clear();
  }
})();
</script>"""


def drafts_script(scope: str) -> str:
    """The page script that keeps the message boxes' unsent text, for the sign-in `scope`
    (written into the script as JSON, with "<" escaped so it cannot end the script)."""

    def literal(value: str) -> str:
        return json.dumps(value).replace("<", "\\u003c")

    return _SCRIPT % {"scope": literal(scope), "marker": literal(f"st-key-{BOX_KEY_PREFIX}")}


def box_key(session_id: str | None) -> str:
    """The key of the message box of the chat `session_id` (None: no chat open) for this
    sign-in: the same each time the chat opens, until the sign-in ends."""
    return f"{BOX_KEY_PREFIX}{_scope()}-{session_id or 'new'}"


def keep_drafts() -> None:
    """Draw the drafts script, for this sign-in's scope."""
    st.html(drafts_script(_scope()), unsafe_allow_javascript=True)


def _scope() -> str:
    """This sign-in's scope, made on first use (it goes with the rest of what was kept for
    the person)."""
    state = st.session_state
    if _SCOPE_KEY not in state:
        state[_SCOPE_KEY] = secrets.token_hex(4)
    scope: str = state[_SCOPE_KEY]
    return scope
