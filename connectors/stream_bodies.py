"""What a server sent for a streamed request when it is not a labelled event stream.

Some servers answer a streamed request with something else: a JSON document (an error such
as ``{"error": {"message": "model not loaded"}}`` with status 200, or a whole reply when
they ignore ``stream``), an HTML page or plain text (a base URL that leads to a web UI or
the wrong path is answered 200 with its page), or an event stream under another label
(``application/json``, ``text/plain``, ``text/html``). The SDKs find no events in the first
kinds, and all a person would learn is that the stream was empty.

`read_non_stream_body` reads such a body before the SDK starts on it, for the vendor
module to interpret: an event stream under another label is read event by event as it
arrives (`event_data`), so text shows as it comes and a stream that goes silent after the
reply still ends it (see `connectors.base.next_item`); any other body is read whole, for
the vendor's JSON rules, or else `not_a_stream`: an error that says what came instead (the
page and its title, or the start of the text) and what to check.
"""

from __future__ import annotations

import html
import json
import logging
import re
from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping
from typing import Generic, TypeVar

import httpx2

from connectors.log_text import loggable
from connectors.resilience import shorten
from gui_agent.exceptions import ModelError, ModelNotFound, ModelResponseError

logger = logging.getLogger(__name__)

T = TypeVar("T")

STREAM_TYPES = frozenset({"", "text/event-stream", "application/x-ndjson"})
"""Content types the SDKs read as an event stream: the right one, none at all, and the
``x-ndjson`` some servers put on event streams."""

_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_TITLE = re.compile(r"<title[^>]*>(.*?)</title", re.IGNORECASE | re.DOTALL)
QUOTED_CHARS = 200
"""How much of a body that is no event stream is quoted in the error."""


def content_type(headers: Mapping[str, str]) -> str:
    """A response's media type, lower case, without parameters ("" when there is none)."""
    return headers.get("content-type", "").split(";")[0].strip().lower()


def json_content(headers: Mapping[str, str]) -> bool:
    """Whether a response is labelled JSON (``application/json`` or ``*/*+json``; not the
    ``x-ndjson`` some servers put on event streams)."""
    kind = content_type(headers)
    return kind == "application/json" or kind.endswith("+json")


_EVENT_FIELDS = (b"data:", b"event:", b"id:", b"retry:", b":")
"""How the lines of an event stream start (``:`` starts a comment, e.g. a keep-alive)."""


async def read_non_stream_body(
    response: httpx2.Response, *, max_chars: int, provider: str
) -> str | AsyncGenerator[object, None] | None:
    """What a streamed response that is not labelled as an event stream holds.

    None for a labelled event stream (the SDK reads that). For any other label (JSON, an
    HTML page, plain text, ...) the start of the body is read: when its first line is one
    of an event stream's, the JSON of each ``data:`` line up to ``[DONE]``, as it arrives
    (`event_data`); else the text of the whole body. ModelResponseError when the body is
    larger than a reply of `max_chars` characters can be (4 bytes a character, and the JSON
    around it).
    """
    kind = content_type(response.headers)
    if kind in STREAM_TYPES:
        return None
    limit_bytes = 4 * max_chars + 65_536
    pieces = aiter(response.aiter_bytes())
    body = bytearray()
    while _first_line(body) is None:
        piece = await anext(pieces, None)
        if piece is None:
            break
        body += piece
        _check_size(body, limit_bytes, kind=kind, provider=provider)
    if (_first_line(body) or b"").startswith(_EVENT_FIELDS):
        logger.info(
            "%s: the server sent an event stream labelled %s", loggable(provider), loggable(kind)
        )
        return event_data(bytes(body), pieces, limit_bytes=limit_bytes, provider=provider)
    async for piece in pieces:
        body += piece
        _check_size(body, limit_bytes, kind=kind, provider=provider)
    logger.info(
        "%s: the server answered with %s, not an event stream", loggable(provider), loggable(kind)
    )
    return body.decode("utf-8", errors="replace")


def _first_line(body: bytes | bytearray) -> bytes | None:
    """The first line of `body` that is not blank, once whole (None until then)."""
    start = len(body) - len(body.lstrip())
    end = body.find(b"\n", start)
    return None if end < 0 else bytes(body[start:end])


def _check_size(body: bytes | bytearray, limit_bytes: int, *, kind: str, provider: str) -> None:
    if len(body) > limit_bytes:
        raise ModelResponseError(
            f"{provider}: the server's answer ({kind or 'no content type'}) exceeded "
            f"{limit_bytes:,} bytes",
            provider=provider,
        )


async def event_data(
    start: bytes, pieces: AsyncIterator[bytes], *, limit_bytes: int, provider: str
) -> AsyncGenerator[object, None]:
    """The JSON of each ``data:`` line of an event stream that begins with `start` and goes
    on with `pieces`, up to ``[DONE]``, each as soon as its line is whole. A line longer
    than `limit_bytes` raises ModelResponseError; one that is not JSON, JSONDecodeError."""
    buffer = start
    while True:
        *lines, buffer = buffer.split(b"\n")
        for line in lines:
            data = _data(line)
            if data == b"[DONE]":
                return
            if data:
                yield json.loads(data)
        piece = await anext(pieces, None)
        if piece is None:
            break
        buffer += piece
        _check_size(buffer, limit_bytes, kind="event stream line", provider=provider)
    data = _data(buffer)
    if data and data != b"[DONE]":
        yield json.loads(data)


def _data(line: bytes) -> bytes:
    """What a ``data:`` line carries (b"" for any other line)."""
    return line[5:].strip() if line.startswith(b"data:") else b""


def not_a_stream(text: str, response: httpx2.Response, *, provider: str, hint: str) -> ModelError:
    """The error for a body that is neither an event stream nor JSON, in words a person can
    act on: where it came from, what it was (an HTML page and its title, or the start of
    the text), and `hint` (what to check, e.g. the base URL)."""
    kind = content_type(response.headers) or "no content type"
    url = response.request.url.copy_with(query=None, fragment=None, userinfo=b"")
    said = ""
    page = html_page(text, response.headers)
    if not text.strip():
        what = f"an empty body ({kind})"
    elif page is not None:
        what = f"{page} ({kind})"
    else:
        what, said = f"text ({kind})", f": {shorten(text, QUOTED_CHARS)!r}"
    return ModelResponseError(
        f"{provider}: {url} answered with {what} instead of an event stream{said}; {hint}",
        provider=provider,
    )


_WRONG_ENDPOINT = re.compile(
    r"\b(?:unexpected|unknown|invalid|unsupported|no such) (?:endpoint|route|path|url)\b"
    r"|\b(?:endpoint|route|path|url|page|file) not found\b"
    r"|\bno route\b|\bcannot (?:post|get|put)\b|\bmethod not allowed\b"
    r"|^\W*(?:404\W*)?not found\W*$",
    re.IGNORECASE,
)
"""What servers say when a request went to a path they do not serve: LM Studio's
``Unexpected endpoint or method``, Go's ``404 page not found`` (Ollama), llama.cpp's
``File Not Found``, Express's ``Cannot POST /...``, FastAPI's bare ``Not Found``. Words
about a model (``model 'x' not found``) do not match."""


def says_wrong_endpoint(detail: str) -> bool:
    """Whether a server's error words say the request went to a path it does not serve."""
    return bool(_WRONG_ENDPOINT.search(detail.strip()))


def wrong_endpoint(
    detail: str,
    url: httpx2.URL,
    *,
    provider: str,
    hint: str,
    status: int | None = None,
    page: bool = False,
) -> ModelError | None:
    """The error for an answer that says the request went to the wrong path, else None.

    `detail` is what the server said (a page by its title, when `page`). It says so when
    its words do (`says_wrong_endpoint`), whatever the status (LM Studio answers 200), and
    for a web page with status 404 or 405: the API itself answers an unknown model in JSON.
    Not retried (asking the same path again does not help); names the URL and `hint`.
    """
    if not (says_wrong_endpoint(detail) or (page and status in (404, 405))):
        return None
    where = url.copy_with(query=None, fragment=None, userinfo=b"")
    code = f" (HTTP {status})" if status is not None and status != 200 else ""
    said = f" (server said: {shorten(detail, QUOTED_CHARS)})" if detail else ""
    return ModelNotFound(
        f"{provider}: {where} is not an endpoint of the API{code}{said}; {hint}",
        status=status,
        provider=provider,
    )


def wrong_endpoint_status(
    detail: str, body: object, response: httpx2.Response, *, provider: str, hint: str
) -> ModelError | None:
    """`wrong_endpoint` for an SDK's error status: what the server said (`detail`), its
    body (a web page or not) and the answer it came in."""
    status = response.status_code if response.status_code >= 400 else None
    page = isinstance(body, str) and html_page(body, response.headers) is not None
    return wrong_endpoint(
        detail, response.request.url, provider=provider, hint=hint, status=status, page=page
    )


def html_page(text: str, headers: Mapping[str, str]) -> str | None:
    """``an HTML page titled '...'`` when `text` is a web page (it starts like one, or is
    labelled as one and starts with a tag), else None: what to say instead of quoting its
    markup."""
    start = text.lstrip()[:15].lower()
    labelled = content_type(headers) in _HTML_TYPES and start.startswith("<")
    if not labelled and not start.startswith(("<!doctype", "<html")):
        return None
    found = _TITLE.search(text[:65_536])
    title = shorten(html.unescape(found.group(1)), 80) if found else ""
    return f"an HTML page titled {title!r}" if title else "an HTML page"


async def close_items(items: object) -> None:
    """Close `items` when it is an async generator (an event stream read by `event_data`);
    an SDK stream is closed by its own ``close``."""
    if isinstance(items, AsyncGenerator):
        await items.aclose()


class ReadItems(Generic[T]):
    """Items already read (from a body that was no event stream), as an async iterator."""

    def __init__(self, items: Iterable[T]) -> None:
        self._items = iter(items)

    def __aiter__(self) -> ReadItems[T]:
        return self

    async def __anext__(self) -> T:
        try:
            return next(self._items)
        except StopIteration:
            raise StopAsyncIteration from None
