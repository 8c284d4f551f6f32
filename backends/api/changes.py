"""The caller's chats list, live: `GET /api/sessions/changes` as Server-Sent Events.

A front end that shows the list of its user's chats (a sidebar) learns here, without
polling, of every chat of theirs created, imported, renamed (a title set by hand or by the
first message) or deleted, whichever front end made the change: another tab of the page,
another API client, this one. The stream opens with

    event: hello
    data: {"protocol_version": "...", "user": "<the token's user>"}

then writes one event per change, named by its kind,

    event: created | imported | renamed | deleted
    data: {"kind": "...", "session_id": "...", "title": "<the title after the change>"}

(for deleted, the title it had), with a comment line every `keepalive_s` seconds while
quiet. Changes are not numbered nor kept: a client that reconnects reads the list again
(`GET /api/sessions`) after `hello`.
The stream ends (without an event) when the server shuts down. Access is checked again at
a bounded interval, as on a session's event stream (`sse`): a token that expires, or a user
removed from the users file, ends the stream with

    event: closed
    data: {"error": {"code": "unauthorized", "message": "..."}}

A client that stops reading is not waited for: past `MAX_QUEUED` changes waiting, the
stream ends with `event: fell_behind` (reconnect and read the list again).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator

from backends.api.sse import (
    CLOSED_EVENT,
    FELL_BEHIND_EVENT,
    KEEPALIVE,
    RETRY_MS,
    Recheck,
    closed_if_refused,
)
from backends.api.sse import encode_named as encode
from gui_agent.changes import ChangeFeed, ChatChange, ChatChangeKind
from schema import PROTOCOL_VERSION

MAX_QUEUED = 1000
"""Changes kept for a client that is not reading; past this its stream ends."""

REMOVED = {
    "code": "unauthorized",
    "message": "this user was removed from the server's users; their chats were closed",
}


async def change_stream(
    feed: ChangeFeed,
    owner: str,
    *,
    keepalive_s: float,
    recheck: Recheck,
    recheck_s: float,
    closing: asyncio.Event | None = None,
) -> AsyncIterator[bytes]:
    """The SSE body for one client of `owner`'s chats list (see the module docstring).
    The listener is registered before `hello` is written and removed however the stream
    ends, so a change made after `hello` is never missed. The stream ends (no event) when
    `closing` is set: the server is shutting down and lets its connections finish."""
    queue: asyncio.Queue[ChatChange | None] = asyncio.Queue(maxsize=MAX_QUEUED + 1)

    def listener(change: ChatChange) -> None:  # called inside the change: take note only
        if not queue.full():
            queue.put_nowait(change if queue.qsize() < MAX_QUEUED else None)

    with feed.listen(owner, listener):
        yield encode(
            "hello", {"protocol_version": PROTOCOL_VERSION, "user": owner}, retry_ms=RETRY_MS
        )
        live = _follow(queue, keepalive_s, recheck, recheck_s, closing or asyncio.Event())
        async with contextlib.aclosing(live) as chunks:
            async for chunk in chunks:
                yield chunk


async def _follow(
    queue: asyncio.Queue[ChatChange | None],
    keepalive_s: float,
    recheck: Recheck,
    recheck_s: float,
    closing: asyncio.Event,
) -> AsyncGenerator[bytes, None]:
    """The live part of `change_stream`; its waiting tasks are cancelled on exit."""
    clock = asyncio.get_running_loop().time
    quiet_since = checked_at = clock()
    closed = asyncio.create_task(closing.wait(), name="sse-changes-closing")
    pending: asyncio.Task[ChatChange | None] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.create_task(queue.get(), name="sse-next-change")
            due = min(quiet_since + keepalive_s, checked_at + recheck_s)
            await asyncio.wait(
                {pending, closed},
                timeout=max(0.0, due - clock()),
                return_when=asyncio.FIRST_COMPLETED,
            )
            if closed.done():
                return
            change: ChatChange | None = None
            if pending.done():
                change, pending = pending.result(), None
                if change is None:
                    yield encode(FELL_BEHIND_EVENT, _fell_behind())
                    return
            now = clock()
            if now - checked_at >= recheck_s:
                checked_at = now
                if (refusal := await closed_if_refused(recheck)) is not None:
                    yield refusal
                    return
            if change is not None:
                if change.kind is ChatChangeKind.OWNER_REMOVED:
                    yield encode(CLOSED_EVENT, {"error": REMOVED})
                    return
                quiet_since = now
                yield encode(change.kind.value, _data(change))
            elif now - quiet_since >= keepalive_s:
                quiet_since = now
                yield KEEPALIVE
    finally:
        waiting = {closed} if pending is None else {closed, pending}
        for task in waiting:
            task.cancel()
        await asyncio.wait(waiting)


def _data(change: ChatChange) -> dict[str, str]:
    return {"kind": change.kind.value, "session_id": change.session_id, "title": change.title}


def _fell_behind() -> dict[str, dict[str, str]]:
    return {
        "error": {
            "code": FELL_BEHIND_EVENT,
            "message": (
                f"this stream fell more than {MAX_QUEUED:,} changes behind and was ended; "
                "reconnect and read the list again"
            ),
        }
    }
