"""Images on the page by address: the chat links each picture instead of carrying it.

An image's data inline (a `data:` URL) travels in every full update of the chat: a chat of
ten phone photos is some 70 MB of JSON each time a tab opens it, and the browser parses all
of it before it shows anything. Instead, the page puts each image on the `MediaShelf` and
links it as `media/<token>`; the browser fetches it once, caches it, and a chat update
carries a short address.

A token is random (unguessable) and bound to its owner: `GET media/<token>` answers only the
person the image was shown to (the page's login, read as Gradio reads it), and only while
the token is on the shelf. The shelf is bounded by the bytes it keeps (least recently
shown first out); an image it lets go is shelved again, under a new token, the next time a
chat shows it. An image larger than the whole shelf stays inline.
"""

from __future__ import annotations

import base64
import binascii
import inspect
import logging
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from backends.gradio.markdown import MediaLink, is_base64
from backends.gradio.owners import LOCAL_OWNER
from schema import ImagePart

__all__ = ["MEDIA_PATH", "MediaLink", "MediaShelf", "add_media_route", "mounted_page"]

logger = logging.getLogger(__name__)

MEDIA_PATH = "media"
"""Where the page's images are served, relative to the page (a reverse proxy's prefix and
`root_path` included that way)."""

DEFAULT_MAX_BYTES = 256 * 2**20

_HEADERS = {
    # The address names this image only: the browser may keep it, nobody else may.
    "Cache-Control": "private, max-age=86400, immutable",
    "X-Content-Type-Options": "nosniff",
    # Opened on its own (an SVG in a tab of its own), it runs nothing and loads nothing.
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; sandbox",
}


@dataclass(frozen=True, slots=True)
class _Shelved:
    owner: str
    media_type: str
    data: str  # base64, as the message keeps it


class MediaShelf:
    """The images the page has linked, by token; bounded by `max_bytes` of their data."""

    def __init__(self, *, max_bytes: int = DEFAULT_MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._by_token: OrderedDict[str, _Shelved] = OrderedDict()
        self._tokens: dict[tuple[str, str, str], str] = {}
        self._bytes = 0
        self._lock = threading.Lock()  # (a Gradio callback may run in a worker thread)

    @property
    def kept_bytes(self) -> int:
        return self._bytes

    def __len__(self) -> int:
        return len(self._by_token)

    def linker(self, owner: str) -> MediaLink:
        """`link` for one owner's chat views."""
        return lambda image: self.link(owner, image)

    def link(self, owner: str, image: ImagePart) -> str | None:
        """The address of `image` for `owner` (the same address while it stays shelved),
        or None when it has no data, is not an image, its data is not base64 or it is larger
        than the whole shelf. Its data is read once, when it is shelved: a chat shown again
        costs a lookup per image."""
        data = image.data
        media_type = image.media_type.lower()
        if data is None or len(data) > self.max_bytes or not media_type.startswith("image/"):
            return None
        key = (owner, media_type, data)
        with self._lock:
            token = self._tokens.get(key)
            if token is not None:
                self._by_token.move_to_end(token)
                return f"{MEDIA_PATH}/{token}"
        if not is_base64(data):  # (read once, outside the lock: it takes a while)
            return None
        with self._lock:
            token = self._tokens.get(key)  # shelved meanwhile?
            if token is None:
                token = secrets.token_urlsafe(18)
                self._by_token[token] = _Shelved(owner, media_type, data)
                self._tokens[key] = token
                self._bytes += len(data)
                self._make_room()
            return f"{MEDIA_PATH}/{token}"

    def take(self, owner: str, token: str) -> tuple[str, bytes] | None:
        """(media type, bytes) of the image `token` names, if it was shown to `owner`."""
        with self._lock:
            shelved = self._by_token.get(token)
        if shelved is None or shelved.owner != owner:
            return None
        try:
            return shelved.media_type, base64.b64decode(shelved.data)
        except (binascii.Error, ValueError):
            return None

    def _make_room(self) -> None:
        while self._bytes > self.max_bytes and self._by_token:
            _token, shelved = self._by_token.popitem(last=False)
            del self._tokens[(shelved.owner, shelved.media_type, shelved.data)]
            self._bytes -= len(shelved.data)


def add_media_route(app: Starlette, shelf: MediaShelf) -> None:
    """Serve `shelf` at `/media/{token}` on `app`, ahead of a page mounted at its root (a
    mount there answers every path it is asked first)."""

    async def media(request: Request) -> Response:
        owner = await _page_user(app, request)
        if owner is None:
            return JSONResponse({"error": {"code": "unauthorized"}}, status_code=401)
        # (decoding a photo takes milliseconds: not on the event loop)
        found = await run_in_threadpool(shelf.take, owner, str(request.path_params["token"]))
        if found is None:
            return JSONResponse({"error": {"code": "not_found"}}, status_code=404)
        media_type, body = found
        return Response(body, media_type=media_type, headers=_HEADERS)

    routes = app.router.routes
    root = next(
        (i for i, r in enumerate(routes) if isinstance(r, Mount) and r.path == ""), len(routes)
    )
    routes.insert(root, Route(f"/{MEDIA_PATH}/{{token}}", media, methods=["GET"]))


async def _page_user(app: Starlette, request: Request) -> str | None:
    """Who the page's login says `request` is: the page's owner name ("local" when the page
    has no login), or None when it has a login and the request is not signed in."""
    page = mounted_page(app)
    if page is None:
        return None
    auth = getattr(page, "auth", None)
    dependency: Callable[[Request], Any] | None = getattr(page, "auth_dependency", None)
    if dependency is not None:
        user = dependency(request)
        if inspect.isawaitable(user):
            user = await user
        return user if isinstance(user, str) and user else None
    if auth is None:
        return LOCAL_OWNER
    cookie_id = getattr(page, "cookie_id", "")
    token = request.cookies.get(f"access-token-{cookie_id}") or request.cookies.get(
        f"access-token-unsecure-{cookie_id}"
    )
    tokens: dict[str, str] = getattr(page, "tokens", {})
    user = tokens.get(token) if token else None
    return user if isinstance(user, str) and user else None


def mounted_page(app: Starlette) -> Any | None:
    """The Gradio app mounted at the root of `app`, the one that answers there (None before
    it is mounted)."""
    for route in app.router.routes:
        if isinstance(route, Mount) and route.path == "":
            return route.app
    return None
