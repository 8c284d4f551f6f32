"""Server-Sent Events: the session's event stream on the wire.

Each event is written as

    id: <epoch>-<seq>
    event: <type>
    data: <the event as JSON, one line; EVENT_ADAPTER.validate_json reads it back>

The epoch names one run of the session's sequence numbers (they start again when the server
restarts or an idle session is reloaded). Carrying it in the id means a browser's EventSource,
which reconnects to the same URL with the last id it saw, is told to reload rather than
replayed the wrong events when the numbers started again meanwhile.

A stream opens with `event: hello` (no id, so it does not move the client's Last-Event-ID),
replays buffered events after the client's last seen `seq`, then follows the session live,
with a comment line every `keepalive_s` seconds so proxies keep the connection open.
`hello` says where the session is at its `last_seq` (state, whether an AutoChat run is
going on (`autochat_active`: with STOP, it waits between two turns), open approvals, and in
`streaming` the replies being written, with their text so far, or while one has not begun
because its model is asked again, that notice in `retrying`), so a client that starts
mid-reply, or is told to `resync`, shows the reply whole; the replayed events (seq up to
`last_seq`) are already in it.
`EventStreamResponse` watches for the client hanging up and then cancels the stream, which
closes the session subscription; no task outlives the response.

Access is checked again while the stream is open, at a bounded interval (not per event):
a token that has expired, or whose user was removed from the users file (by
`gui-agent users remove`, from another process), ends the stream within that interval with

    event: closed
    data: {"error": {"code": "unauthorized", "message": "..."}}

(no id; the data is the API's error shape, the code the one a new request would get),
after the events the stream already holds: a check that finds the user removed before the
server's users-file watcher looked has the removal applied first (`auth`), so the removed
user's turn is seen stopping. A client that reconnects is then refused (401). When the
session itself closes under the stream, access is checked once more: a user removed
while the server watches the users file has their sessions closed at once
(`SessionManager.revoke`), and their streams end with the same `closed` event then,
without waiting for the interval. A session deleted (by any client, or by the retention
period) ends its streams the same way, with the answer a new request would get:

    event: closed
    data: {"error": {"code": "not_found", "message": "this chat was deleted; ..."}}

A client that stops on `closed` (the API's Python and browser clients do) does not open
the stream again; a browser's bare EventSource that reconnects meets that 404, which
ends it for good (an EventSource does not retry an answer that is not 200).

An event that cannot be written as JSON (a tool's result nested deeper than the serializer
goes) is sent in its place, with its id, as

    event: unencodable
    data: {"seq": <seq>, "type": "<its type>", "error": {"code": "unencodable", ...}}

so the stream goes on, and a client that reconnects does not replay it again and again.

A client that stops reading (a frozen tab, a network gone dead before TCP noticed) is not
waited for: once more than `MAX_BEHIND` events wait for it, the session drops them and the
stream ends, when the client reads again, with

    event: fell_behind
    data: {"error": {"code": "fell_behind", "message": "..."}, "last_event_id": "<id>"}

(no id; `last_event_id` is the id of the last event the stream wrote, null when none).
An EventSource then reconnects by itself with that Last-Event-ID: the events after it are
replayed while the session's buffer holds them, else `hello` says `resync` and the client
reloads the session.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Callable,
    Sequence,
)
from dataclasses import dataclass
from typing import Any

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from backends.api.errors import ApiError
from gui_agent.events import MAX_BEHIND, Subscription
from gui_agent.interpreter import Interpreter
from gui_agent.log_text import loggable
from schema import Event

logger = logging.getLogger(__name__)

KEEPALIVE = b": keep-alive\n\n"
CLOSED_EVENT = "closed"
FELL_BEHIND_EVENT = "fell_behind"
UNENCODABLE_EVENT = "unencodable"
DEFAULT_RECHECK_S = 5.0
RETRY_MS = 2000
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def encode_event(event: Event, epoch: str) -> bytes:
    """The event on the wire. One that cannot be written as JSON (a tool's result nested
    deeper than the serializer goes) is written as `event: unencodable` in its place, with
    its id, so the stream goes on and a client that reconnects does not meet it again."""
    try:
        data = event.model_dump_json()
    except ValueError as exc:  # PydanticSerializationError
        logger.error(
            "session %s: event %d cannot be sent: %s", event.session_id, event.seq, loggable(exc)
        )
        name = UNENCODABLE_EVENT
        data = json.dumps(
            {
                "seq": event.seq,
                "type": event.type,
                "error": {
                    "code": UNENCODABLE_EVENT,
                    "message": "this event could not be written as JSON; the server log says why",
                },
            },
            separators=(",", ":"),
        )
    else:
        name = event.type
    return f"id: {epoch}-{event.seq}\nevent: {name}\ndata: {data}\n\n".encode()


def encode_named(name: str, data: Any, *, retry_ms: int | None = None) -> bytes:
    """An event without an id (e.g. `hello`); `data` is written as compact JSON."""
    retry = f"retry: {retry_ms}\n" if retry_ms is not None else ""
    payload = json.dumps(data, separators=(",", ":"))
    return f"{retry}event: {name}\ndata: {payload}\n\n".encode()


async def _next_event(iterator: AsyncIterator[Event]) -> Event | None:
    try:
        return await anext(iterator)
    except StopAsyncIteration:
        return None


Recheck = Callable[[], Awaitable[object]]
"""Checks that the client may still read the stream: returns when it may, raises ApiError
(the answer a new request would get) when not."""


@dataclass(slots=True)
class _Timer:
    """When the live loop is next due to write a keep-alive and to recheck access."""

    keepalive_s: float
    recheck_s: float | None
    quiet_since: float
    checked_at: float

    def timeout(self, now: float) -> float:
        due = self.quiet_since + self.keepalive_s
        if self.recheck_s is not None:
            due = min(due, self.checked_at + self.recheck_s)
        return max(0.0, due - now)

    def recheck_due(self, now: float) -> bool:
        if self.recheck_s is None or now - self.checked_at < self.recheck_s:
            return False
        self.checked_at = now
        return True

    def keepalive_due(self, now: float) -> bool:
        if now - self.quiet_since < self.keepalive_s:
            return False
        self.quiet_since = now
        return True


async def closed_if_refused(recheck: Recheck) -> bytes | None:
    """The final `closed` event when `recheck` refuses, its data in the API's error shape."""
    try:
        await recheck()
    except ApiError as refused:
        error = {"code": refused.code, "message": refused.message}
        return encode_named(CLOSED_EVENT, {"error": error})
    return None


def fell_behind(epoch: str, after: int) -> bytes:
    """The last event of a stream whose client stopped reading (see the module docstring)."""
    last_id = f"{epoch}-{after}" if after else None
    error = {
        "code": FELL_BEHIND_EVENT,
        "message": (
            f"this stream fell more than {MAX_BEHIND:,} events behind and was ended; "
            "reconnect with Last-Event-ID to catch up (or reload the session when the "
            "next hello says resync)"
        ),
    }
    return encode_named(FELL_BEHIND_EVENT, {"error": error, "last_event_id": last_id})


async def event_stream(
    interpreter: Interpreter,
    *,
    since: int | None,
    epoch: str,
    keepalive_s: float,
    hello: Callable[[Sequence[Event], bool], dict[str, Any]],
    stale: bool = False,
    recheck: Recheck | None = None,
    recheck_s: float = DEFAULT_RECHECK_S,
    gone: Recheck | None = None,
) -> AsyncIterator[bytes]:
    """The SSE body for one client of one session.

    Subscribes first, then replays the buffered events after `since` (none when `since` is
    None), so nothing falls between replay and live; events already replayed are skipped
    when they arrive live. `hello(replay, complete)` builds the opening event's data;
    `complete` is False when the buffer no longer holds every event after `since` (or
    `since` comes from before a restart) and the client should reload the session.
    `stale` says `since` belongs to an earlier run of the session's sequence numbers (another
    epoch): nothing is replayed and the client is told to reload.
    `recheck` runs at most every `recheck_s` seconds while the stream is live (before the
    next event is written, and while it is quiet); when it refuses, the stream ends with a
    `closed` event saying why. When the client stops reading and the session ends the
    subscription (`Subscription.fell_behind`), the stream ends with a `fell_behind` event.
    Ends when the session's event hub closes, with a `closed` event when `recheck`, then
    `gone` (is the session still there: it refuses for a deleted one), refuses then; the
    subscription is closed however it ends.
    """
    subscription = interpreter.subscribe()
    try:
        replay = interpreter.events_since(since) if since is not None and not stale else []
        last_seq = interpreter.last_seq
        complete = not stale and (
            since is None
            or since == last_seq
            or (since < last_seq and bool(replay) and replay[0].seq == since + 1)
        )
        yield encode_named("hello", hello(replay, complete), retry_ms=RETRY_MS)
        for replayed in replay:
            yield encode_event(replayed, epoch)
        clock = asyncio.get_running_loop().time
        timer = _Timer(keepalive_s, recheck_s if recheck else None, clock(), clock())
        after = replay[-1].seq if replay else 0
        live = _follow(subscription, after, epoch, timer, recheck=recheck, gone=gone)
        async with contextlib.aclosing(live) as chunks:
            async for chunk in chunks:
                yield chunk
    finally:
        subscription.close()


async def _follow(
    subscription: Subscription,
    after: int,
    epoch: str,
    timer: _Timer,
    *,
    recheck: Recheck | None,
    gone: Recheck | None,
) -> AsyncGenerator[bytes, None]:
    """The live part of `event_stream`: events newer than seq `after`, keep-alives while
    quiet, and the access recheck; the task awaiting the next event is cancelled on exit."""
    clock = asyncio.get_running_loop().time
    iterator = aiter(subscription)
    pending: asyncio.Task[Event | None] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.create_task(_next_event(iterator), name="sse-next-event")
            done, _ = await asyncio.wait({pending}, timeout=timer.timeout(clock()))
            if (
                recheck is not None
                and timer.recheck_due(clock())
                and (refusal := await closed_if_refused(recheck)) is not None
            ):
                # What the session said before the refusal is written first: a removed
                # user's stopped turn (the refusing check has it stopped, see `auth`).
                for said in _taken(pending, subscription):
                    if said.seq > after:
                        after = said.seq
                        yield encode_event(said, epoch)
                yield refusal
                return
            if not done:
                if timer.keepalive_due(clock()):
                    yield KEEPALIVE
                continue
            event, pending = pending.result(), None
            if event is None and subscription.fell_behind:
                yield fell_behind(epoch, after)
                return
            if event is None:  # the session closed: deleted, or its owner removed
                if (refusal := await _why_closed(recheck, gone)) is not None:
                    yield refusal
                return
            if event.seq > after:
                after = event.seq
                timer.quiet_since = clock()
                yield encode_event(event, epoch)
    finally:
        if pending is not None:
            pending.cancel()
            await asyncio.wait({pending})


async def _why_closed(*checks: Recheck | None) -> bytes | None:
    """The `closed` event of the first of `checks` that refuses, if any does."""
    for check in checks:
        if check is not None and (refusal := await closed_if_refused(check)) is not None:
            return refusal
    return None


def _taken(pending: asyncio.Task[Event | None], subscription: Subscription) -> list[Event]:
    """The events already delivered to a stream that is about to end: the one `pending`
    read, if it has, then those still waiting in `subscription`. `pending` is cancelled
    if it has not read one (it then takes none: a task is cancelled at its next step);
    the caller still awaits it, as for any end of the stream."""
    taken: list[Event] = []
    if pending.done():
        if not pending.cancelled() and (event := pending.result()) is not None:
            taken.append(event)
    else:
        pending.cancel()
    taken.extend(subscription.pending())
    return taken


class EventStreamResponse(StreamingResponse):
    """A `text/event-stream` response that stops as soon as the client disconnects.

    Starlette's StreamingResponse only notices a lost client on the next write under ASGI
    2.4; this one listens for `http.disconnect` the whole time and cancels the writer.
    """

    media_type = "text/event-stream"

    def __init__(self, content: AsyncIterable[bytes]) -> None:
        super().__init__(content, headers=SSE_HEADERS, media_type=self.media_type)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        writer = asyncio.create_task(self._write(send), name="sse-writer")
        watcher = asyncio.create_task(_until_disconnect(receive), name="sse-disconnect")
        try:
            await asyncio.wait({writer, watcher}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            writer.cancel()
            watcher.cancel()
            await asyncio.wait({writer, watcher})
        if not writer.cancelled() and (error := writer.exception()) is not None:
            raise error

    async def _write(self, send: Send) -> None:
        iterator = self.body_iterator
        try:
            await send(
                {
                    "type": "http.response.start",
                    "status": self.status_code,
                    "headers": self.raw_headers,
                }
            )
            async for chunk in iterator:
                data = chunk.encode(self.charset) if isinstance(chunk, str) else bytes(chunk)
                await send({"type": "http.response.body", "body": data, "more_body": True})
            await send({"type": "http.response.body", "body": b"", "more_body": False})
        except OSError:  # the client went away between two writes
            return
        finally:
            close = getattr(iterator, "aclose", None)
            if close is not None:
                await close()


async def _until_disconnect(receive: Receive) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return
