"""Gradio's built files (`/assets/...`), answered from memory once answered: `AssetCache`.

Every page load asks for about 80 of Gradio's built scripts and styles. Gradio reads each
from disk and compresses it again on every request, and sends it with no caching headers,
so the browser may ask again on the next load: the server spent about half a second of CPU
per page load on files that never change while it runs (`tests/bench/bench_server.py`).

These files are Gradio's build output: public (its login page needs them), content-hashed
(`Index-DphvyggB.js`) and fixed for the life of the process. `AssetCache` keeps the first
whole 200 answer to a GET for each, per content encoding, in an `AssetStore`, and answers
later requests for it from there, choosing an encoding the request accepts. Answers with a
hashed name are marked `Cache-Control: public, max-age=31536000, immutable`: a new Gradio
build has new names. Anything else passes through untouched: other paths, other methods,
conditional and range requests, and answers that are not a whole 200 or would not fit.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from fastapi import FastAPI
from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = [
    "ASSETS_PREFIX",
    "FOREVER",
    "AssetCache",
    "AssetStore",
    "KeptAnswer",
    "accepted_encodings",
    "add_asset_cache",
]

ASSETS_PREFIX = "/assets/"
"""Where Gradio serves its built files, under the page's root."""
FOREVER = "public, max-age=31536000, immutable"
"""The caching header of a content-hashed file: a year, never asked again."""

_HASHED = re.compile(r"-[A-Za-z0-9_-]{8,}\.[A-Za-z0-9]+$")
"""A build file's name with its content hash (Vite's `name-HASH.ext`)."""
_PASS_THROUGH = ("range", "if-none-match", "if-modified-since", "if-range", "if-match")
"""Request headers that ask for something other than the whole file as it is."""
_NOT_KEPT = frozenset({"content-length", "set-cookie", "date", "server", "transfer-encoding"})
"""Answer headers set per answer, never replayed."""
_PREFERENCE = ("br", "gzip", "identity")
"""The encodings an answer is looked up in, best first (those Gradio's middleware makes)."""


def accepted_encodings(header: str) -> set[str]:
    """The content codings an `Accept-Encoding` header accepts, of those kept (q=0 refuses
    one; `*` stands for any not named; identity is accepted unless refused)."""
    named: dict[str, float] = {}
    for part in header.split(","):
        name, _, params = part.strip().partition(";")
        name = name.strip().lower()
        if not name:
            continue
        quality = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0  # a malformed weight is not an acceptance
        named[name] = quality
    star = named.get("*")
    accepted = set()
    for coding in _PREFERENCE:
        weight = named.get(coding, star)
        if weight is None:
            weight = 1.0 if coding == "identity" else 0.0
        if weight > 0:
            accepted.add(coding)
    return accepted


@dataclass(frozen=True)
class KeptAnswer:
    """A whole 200 answer: its headers (those replayed) and body."""

    headers: tuple[tuple[bytes, bytes], ...]
    body: bytes


@dataclass
class AssetStore:
    """The kept answers, by (path under the page's root, content encoding), at most
    `max_bytes` of bodies in all and `max_entry_bytes` each. `hits` counts the answers given
    from here, `kept_bytes` the bodies kept."""

    max_bytes: int = 64 * 2**20
    max_entry_bytes: int = 8 * 2**20
    hits: int = 0
    kept_bytes: int = 0
    answers: dict[tuple[str, str], KeptAnswer] = field(default_factory=dict)

    def find(self, path: str, accepted: set[str]) -> KeptAnswer | None:
        for coding in _PREFERENCE:
            if coding in accepted and (kept := self.answers.get((path, coding))) is not None:
                return kept
        return None

    def keep(self, path: str, coding: str, answer: KeptAnswer) -> bool:
        """Keep `answer` unless it is too large or there is no room left (False)."""
        size = len(answer.body)
        if (path, coding) in self.answers or size > self.max_entry_bytes:
            return False
        if self.kept_bytes + size > self.max_bytes:
            return False
        self.answers[(path, coding)] = answer
        self.kept_bytes += size
        return True


def _route_path(scope: Scope) -> str:
    """The request's path under the app's root (what the page's routes match)."""
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        return path[len(root) :] or "/"
    return path


class AssetCache:
    """Pure ASGI middleware: answers GETs under `ASSETS_PREFIX` from `store` once kept (see
    the module)."""

    def __init__(self, app: ASGIApp, store: AssetStore) -> None:
        self.app = app
        self.store = store

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "GET":
            await self.app(scope, receive, send)
            return
        path = _route_path(scope)
        headers = Headers(scope=scope)
        if not path.startswith(ASSETS_PREFIX) or any(h in headers for h in _PASS_THROUGH):
            await self.app(scope, receive, send)
            return
        hashed = _HASHED.search(path) is not None
        kept = self.store.find(path, accepted_encodings(headers.get("accept-encoding", "")))
        if kept is not None:
            self.store.hits += 1
            await self._answer(kept, hashed, send)
            return
        await self._pass_and_keep(path, hashed, scope, receive, send)

    async def _answer(self, kept: KeptAnswer, hashed: bool, send: Send) -> None:
        headers = _marked(kept.headers, hashed)
        headers["content-length"] = str(len(kept.body))
        await send({"type": "http.response.start", "status": 200, "headers": headers.raw})
        await send({"type": "http.response.body", "body": kept.body})

    async def _pass_and_keep(
        self, path: str, hashed: bool, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """Pass the request on, marking a hashed file's answer; keep a whole 200 answer."""
        start: Message | None = None
        parts: list[bytes] = []
        size = 0

        async def keeping(message: Message) -> None:
            nonlocal start, size
            if message["type"] == "http.response.start":
                if message["status"] == 200:
                    start = message
                    if hashed:
                        marked = _marked(message.get("headers", []), hashed)
                        message = {**message, "headers": marked.raw}
            elif message["type"] == "http.response.body" and start is not None:
                body = message.get("body", b"")
                size += len(body)
                if size > self.store.max_entry_bytes:
                    start = None  # too large to keep: passed on only
                else:
                    parts.append(body)
                    if not message.get("more_body", False):
                        self._keep(path, start, b"".join(parts))
            await send(message)

        await self.app(scope, receive, keeping)

    def _keep(self, path: str, start: Message, body: bytes) -> None:
        headers = Headers(raw=start.get("headers", []))
        if "set-cookie" in headers:
            return  # an answer for one person is not a shared file
        coding = headers.get("content-encoding", "identity").strip().lower()
        if coding not in _PREFERENCE:
            return
        kept = tuple(
            (name, value)
            for name, value in start.get("headers", [])
            if name.decode("latin-1").lower() not in _NOT_KEPT
        )
        self.store.keep(path, coding, KeptAnswer(kept, body))


def _marked(raw: Iterable[tuple[bytes, bytes]], hashed: bool) -> MutableHeaders:
    """A copy of the headers `raw`, cached for good when the file's name is `hashed`."""
    headers = MutableHeaders(raw=list(raw))
    if hashed:
        headers["cache-control"] = FOREVER
    return headers


def add_asset_cache(app: FastAPI, store: AssetStore | None = None) -> AssetStore:
    """Answer `app`'s Gradio build files from memory once answered; returns the store."""
    kept = store if store is not None else AssetStore()
    app.add_middleware(AssetCache, store=kept)
    return kept
