"""A page login the failed-login throttle refuses says so, and for how long.

Gradio's login form can only say "Incorrect credentials": a person whose name the throttle
paused (too many wrong passwords for it) typed the right password and was told it was wrong,
again and again until the pause ran out. `LoginPause` answers such a login itself, before
Gradio checks anything: 429 with `Retry-After` and a `detail` that says the name is paused
and for how long (`paused_words`). Gradio's form leaves its boxes as they are on any answer
but 400 and 200, and the early script (`assets/login_name.js`) shows the detail in the form.

Pure ASGI, like the early script: it reads the login's form (at most `MAX_FORM_BYTES`; a
bigger one, or one it cannot read, goes on to Gradio as it came) and hands the same bytes on
when the name is not paused. Every other request passes through untouched.
"""

from __future__ import annotations

import json
import logging
import math

from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from gui_agent.auth.throttle import LoginThrottle

__all__ = ["MAX_FORM_BYTES", "LoginPause", "add_login_pause", "paused_words"]

logger = logging.getLogger(__name__)

MAX_FORM_BYTES = 64 * 1024
"""The largest login form read here (a name and a password); more goes on unread."""

LOGIN_PATH = "/login"
"""Where Gradio's login form posts to, below the page's root."""


def paused_words(wait_s: float) -> str:
    """What the form says for a name paused `wait_s` seconds more."""
    seconds = max(1, math.ceil(wait_s))
    left = f"{math.ceil(seconds / 60)} min" if seconds >= 120 else f"{seconds} s"
    return (
        "Too many wrong passwords for this name: signing in with it is paused for "
        f"{left} more. The password was not checked."
    )


class LoginPause:
    """Answers a page login for a name `throttle` pauses with 429 and how long it waits."""

    def __init__(self, app: ASGIApp, *, throttle: LoginThrottle) -> None:
        self.app = app
        self.throttle = throttle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not _is_login(scope):
            await self.app(scope, receive, send)
            return
        chunks, more = await _read_up_to(receive, MAX_FORM_BYTES)
        body = b"".join(chunks)
        name = None if more else await _username(scope, body)
        wait = self.throttle.retry_after(name) if name else 0.0
        if wait > 0:
            logger.warning("page login for %r paused for %.0f s more", name, wait)
            await _answer_paused(send, wait)
            return
        await self.app(scope, _replayed(chunks, more, receive), send)


def add_login_pause(app: FastAPI, throttle: LoginThrottle) -> None:
    """Answer `app`'s page logins for paused names (before the app starts)."""
    app.add_middleware(LoginPause, throttle=throttle)


def _is_login(scope: Scope) -> bool:
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        path = path[len(root) :]
    return path.rstrip("/") == LOGIN_PATH


async def _read_up_to(receive: Receive, limit: int) -> tuple[list[bytes], bool]:
    """The request body's chunks, read until its end or past `limit` bytes; and whether
    more is left to read (then what was read is handed on with the rest)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":  # (the client left: nothing to answer)
            return chunks, False
        chunk: bytes = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body", False):
            return chunks, False
        if size > limit:
            return chunks, True


def _replayed(chunks: list[bytes], more: bool, receive: Receive) -> Receive:
    """A `receive` that gives the chunks already read, then (if `more`) the rest."""
    pending = list(chunks)

    async def again() -> Message:
        if pending:
            chunk = pending.pop(0)
            return {"type": "http.request", "body": chunk, "more_body": bool(pending) or more}
        return await receive()  # the rest of the body, or after it the client's disconnect

    return again


async def _username(scope: Scope, body: bytes) -> str | None:
    """The user name of a login form (URL-encoded or multipart), or None."""
    sent = False

    async def once() -> Message:
        nonlocal sent
        if sent:
            return {"type": "http.disconnect"}
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    try:
        form = await Request(scope, once).form()
    except (HTTPException, ValueError, KeyError):  # not a form this reads: Gradio answers it
        return None
    try:
        name = form.get("username")
    finally:
        await form.close()
    return name if isinstance(name, str) and name else None


async def _answer_paused(send: Send, wait_s: float) -> None:
    body = json.dumps({"detail": paused_words(wait_s)}).encode()
    headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(body)).encode()),
        (b"retry-after", str(max(1, math.ceil(wait_s))).encode()),
        (b"cache-control", b"no-store"),
    ]
    await send({"type": "http.response.start", "status": 429, "headers": headers})
    await send({"type": "http.response.body", "body": body})
