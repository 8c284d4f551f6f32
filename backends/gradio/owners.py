"""Who a request comes from: its owner (the logged-in user, or "local" without login), the
browser tab it comes from, and the page's note on who is signed in."""

from __future__ import annotations

import gradio as gr

from backends.gradio.markdown import escape_html

__all__ = ["LOCAL_OWNER", "account_note", "owner_of", "tab_of"]

LOCAL_OWNER = "local"


def owner_of(request: gr.Request | None) -> str:
    """The logged-in user, or "local" when the app runs without login."""
    username = getattr(request, "username", None) if request is not None else None
    return username if isinstance(username, str) and username else LOCAL_OWNER


def tab_of(request: gr.Request | None) -> str:
    """A key for the browser tab (and its user) a request comes from."""
    session_hash = getattr(request, "session_hash", None) if request is not None else None
    return f"{owner_of(request)}\0{session_hash or ''}"


def account_note(request: gr.Request | None) -> str:
    """Who is signed in, and a way out, when the page was opened through the login form
    (a reverse proxy that signs people in has no logout of ours)."""
    username = getattr(request, "username", None) if request is not None else None
    if not isinstance(username, str) or not username:
        return ""
    # a dict, or Gradio's dict-like Obj (which iterates as key-value pairs)
    cookies = dict(getattr(request, "cookies", None) or {})
    signed_in = f"Signed in as **{escape_html(username)}**"
    if not any(str(name).startswith("access-token") for name in cookies):
        return signed_in + "."
    return f'{signed_in} · <a href="logout" target="_self">Log out</a>'  # see page.js
