"""A script the page runs before Gradio's own: `EarlyScript` puts it at the top of the
`<head>` of every HTML page the app serves.

Gradio offers no way to run a script before its own (a Blocks' `head` is added by Gradio's
scripts, after they loaded), and four things need this script:
- Gradio's status trackers keep an idle page drawing 60 frames a second, which can only be
  changed before its scripts load (`assets/frame_timer.js` says why, and what it does);
- Gradio's login form empties the user name after a wrong password, and the login page
  runs no other script of ours (`assets/login_name.js` gives the name back);
- Gradio's client counts its stream of server events as open after it broke, so the tab
  never hears back again; it must be mended from the first stream the client opens
  (`assets/event_stream.js`);
- Gradio's client drops an event the server refuses because the tab's page login ended (a
  restart, a new password) without a word, and a send's message with it; the page must
  hear of it from the client's first request (`assets/signed_out.js`).

The middleware is pure ASGI, so it sees only answers,
never changes a request, and leaves every answer that is not a whole, uncompressed HTML
page as it was.
"""

from __future__ import annotations

import re
from pathlib import Path

from fastapi import FastAPI
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from backends.gradio.assets import ASSETS_DIR

__all__ = ["SCRIPT_FILES", "EarlyScript", "add_early_script", "early_script"]

SCRIPT_FILES = ("frame_timer.js", "login_name.js", "event_stream.js", "signed_out.js")
"""The early script's parts, in order (each one a whole statement)."""

_HEAD = re.compile(rb"<head(\s[^>]*)?>", re.IGNORECASE)


def early_script(folder: Path = ASSETS_DIR) -> str:
    """The script from the parts in `folder` (a part that is missing is left out: the page
    works without it). Refused if it could end its own `<script>` element early."""
    parts: list[str] = []
    for name in SCRIPT_FILES:
        try:
            text = (folder / name).read_text(encoding="utf-8")
        except OSError:
            continue
        if "</script" in text.lower() or "<!--" in text:
            raise ValueError(f"{name} cannot be put inline: it contains </script or <!--")
        parts.append(text.strip())
    return "\n".join(parts)


def with_script(page: bytes, tag: bytes) -> bytes:
    """`page` with `tag` right after its opening `<head>` tag (unchanged without one)."""
    found = _HEAD.search(page)
    if found is None:
        return page
    return page[: found.end()] + tag + page[found.end() :]


class EarlyScript:
    """Puts `<script>{script}</script>` first in the `<head>` of the HTML pages answered to
    GET requests. A HEAD request is answered with the headers of that GET answer, its
    length included, and no body. Other answers (another type, compressed, any other
    method) pass through untouched, as they arrive."""

    def __init__(self, app: ASGIApp, script: str, skip: tuple[str, ...] = ()) -> None:
        self.app = app
        self.tag = f"<script>{script}</script>".encode() if script else b""
        self.skip = skip
        """Paths of other front ends the app serves (and all below them): Gradio's mends
        are not theirs, so their pages are left as they are."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] != "http"
            or scope["method"] not in ("GET", "HEAD")
            or not self.tag
            or self._skipped(scope)
        ):
            await self.app(scope, receive, send)
            return
        head = scope["method"] == "HEAD"
        start: Message | None = None
        parts: list[bytes] = []

        async def with_tag(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                headers = Headers(raw=message.get("headers", []))
                page = headers.get("content-type", "").lower().startswith("text/html")
                if page and "content-encoding" not in headers:
                    start = message  # sent with the whole body, once its length is known
                    return
            elif message["type"] == "http.response.body" and start is not None:
                parts.append(message.get("body", b""))
                if message.get("more_body", False):
                    return
                body = with_script(b"".join(parts), self.tag)
                headers = MutableHeaders(raw=list(start.get("headers", [])))
                headers["content-length"] = str(len(body))
                await send({**start, "headers": headers.raw})
                await send({"type": "http.response.body", "body": b"" if head else body})
                return
            elif message["type"] == "http.response.body" and head:
                if not message.get("more_body", False):  # the GET answer's body is not sent
                    await send({"type": "http.response.body", "body": b""})
                return
            await send(message)

        # A HEAD is asked as the GET it stands for: its headers are then that answer's.
        await self.app({**scope, "method": "GET"} if head else scope, receive, with_tag)

    def _skipped(self, scope: Scope) -> bool:
        path: str = scope.get("path", "")
        root: str = scope.get("root_path", "")
        if root and path.startswith(root):
            path = path[len(root) :]
        return any(path == prefix or path.startswith(prefix + "/") for prefix in self.skip)


def add_early_script(
    app: FastAPI, folder: Path = ASSETS_DIR, *, skip: tuple[str, ...] = ()
) -> None:
    """Serve `app`'s pages with the early script (before the app starts), but for those at
    the paths in `skip` and below."""
    app.add_middleware(EarlyScript, script=early_script(folder), skip=skip)
