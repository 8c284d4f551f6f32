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
`EventStreamResponse` watches for the client hanging up and then cancels the stream, which
closes the session subscription; no task outlives the response.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterable, AsyncIterator, Callable, Sequence
from typing import Any

from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from gui_agent.interpreter import Interpreter
from schema import Event

KEEPALIVE = b": keep-alive\n\n"
RETRY_MS = 2000
SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


def encode_event(event: Event, epoch: str) -> bytes:
    data = event.model_dump_json()
    return f"id: {epoch}-{event.seq}\nevent: {event.type}\ndata: {data}\n\n".encode()


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


async def event_stream(
    interpreter: Interpreter,
    *,
    since: int | None,
    epoch: str,
    keepalive_s: float,
    hello: Callable[[Sequence[Event], bool], dict[str, Any]],
    stale: bool = False,
) -> AsyncIterator[bytes]:
    """The SSE body for one client of one session.

    Subscribes first, then replays the buffered events after `since` (none when `since` is
    None), so nothing falls between replay and live; events already replayed are skipped
    when they arrive live. `hello(replay, complete)` builds the opening event's data;
    `complete` is False when the buffer no longer holds every event after `since` (or
    `since` comes from before a restart) and the client should reload the session.
    `stale` says `since` belongs to an earlier run of the session's sequence numbers (another
    epoch): nothing is replayed and the client is told to reload.
    Ends when the session's event hub closes; the subscription is closed however it ends.
    """
    subscription = interpreter.subscribe()
    iterator = aiter(subscription)
    pending: asyncio.Task[Event | None] | None = None
    try:
        replay = interpreter.events_since(since) if since is not None and not stale else []
        last_seq = interpreter.last_seq
        complete = not stale and (
            since is None
            or since == last_seq
            or (since < last_seq and bool(replay) and replay[0].seq == since + 1)
        )
        yield encode_named("hello", hello(replay, complete), retry_ms=RETRY_MS)
        last = 0
        for replayed in replay:
            last = replayed.seq
            yield encode_event(replayed, epoch)
        while True:
            if pending is None:
                pending = asyncio.create_task(_next_event(iterator), name="sse-next-event")
            done, _ = await asyncio.wait({pending}, timeout=keepalive_s)
            if not done:
                yield KEEPALIVE
                continue
            event, pending = pending.result(), None
            if event is None:
                return
            if event.seq <= last:
                continue
            last = event.seq
            yield encode_event(event, epoch)
    finally:
        if pending is not None:
            pending.cancel()
            await asyncio.wait({pending})
        subscription.close()


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
