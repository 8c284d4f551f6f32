"""The session store protocol, an in-memory store, and retention.

A store keeps sessions (`SessionRecord`) and their messages. Sessions belong to one owner:
`get_session`, `rename_session` and `delete_session` behave as if another owner's session did
not exist (None / False, which callers answer with 404). The message methods take a session
id only; check ownership with `get_session` first.

A conversation is append-only: `append_message` adds one message (or completes the partial
reply with the same id) and never rewrites the others. A reply that is still streaming is
kept with `upsert_partial`, stored as INTERRUPTED until the completed message replaces it, so
a crash leaves the partial text marked interrupted. Only "clear" and "edit last" rewrite the
history, through `replace_messages`.

A message the person sends while a turn runs waits for the agent in memory; `queue_message`
keeps it on disk meanwhile, and storing it in the history (`append_message`,
`replace_messages`) takes it off that queue. What is still queued at start-up was left by a
server that died without stopping its turns (`load_queued`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timedelta
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

from gui_agent.exceptions import ConfigError, InvalidRequest, StoreError
from schema import InterpreterState, Message, MessageStatus, SessionRecord
from schema.messages import utcnow

logger = logging.getLogger(__name__)

Clock = Callable[[], datetime]
"""Returns the current time, timezone-aware."""

LIVE_STATES = (InterpreterState.RUNNING, InterpreterState.WAITING)
"""States that mean a turn was under way; after a restart nothing is running any more."""


@runtime_checkable
class SessionStore(Protocol):
    """Where sessions and their messages are kept. Every method is a coroutine."""

    async def open(self) -> None:
        """Prepare the store (create, migrate, lock). Raises StoreError and subclasses."""
        ...

    async def close(self) -> None:
        """Release the store. Safe to call twice."""
        ...

    async def create_session(self, record: SessionRecord) -> None:
        """Store a new session. StoreError if its id is taken."""
        ...

    async def update_session(self, record: SessionRecord) -> None:
        """Replace a session's fields (not its messages, and not `created_at`, which never
        changes). StoreError if the owner has no such session."""
        ...

    async def get_session(self, session_id: str, *, owner: str) -> SessionRecord | None:
        """The session, or None when it does not exist or belongs to another owner."""
        ...

    async def list_sessions(
        self, owner: str, *, query: str | None = None, limit: int = 200, offset: int = 0
    ) -> list[SessionRecord]:
        """The owner's sessions, most recently updated first. `query` keeps those whose title
        contains it, ignoring case."""
        ...

    async def delete_session(self, session_id: str, *, owner: str) -> bool:
        """Delete a session and its messages; False when the owner has no such session."""
        ...

    async def rename_session(self, session_id: str, title: str, *, owner: str) -> bool:
        """Set a session's title; False when the owner has no such session."""
        ...

    async def append_message(self, session_id: str, message: Message) -> None:
        """Add a message at the end, durably, or replace the partial with the same id in
        place, and take it off the session's queue. StoreError if the session does not
        exist."""
        ...

    async def queue_message(self, session_id: str, message: Message) -> None:
        """Keep a message that waits for the agent, until the history holds it. Nothing
        happens when the history already does (it was taken up first). StoreError if the
        session does not exist."""
        ...

    async def load_queued(self) -> dict[str, list[Message]]:
        """The messages still queued, by session, oldest first: at start-up, those a server
        that died mid-turn never filed."""
        ...

    async def upsert_partial(self, session_id: str, message: Message) -> None:
        """Keep a reply that is still streaming. It is stored with status INTERRUPTED (until
        `append_message` stores the completed message with the same id) and never overwrites
        a message that was already completed."""
        ...

    async def load_messages(self, session_id: str, *, limit: int | None = None) -> list[Message]:
        """The session's messages in order; with `limit`, only the newest `limit` of them."""
        ...

    async def count_messages(self, session_id: str) -> int: ...

    async def replace_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        """Replace the whole history (only "clear" and "edit last" do this); the queued
        messages it holds are taken off the queue."""
        ...

    async def mark_interrupted_runs(self) -> list[str]:
        """At start-up: sessions stored RUNNING or WAITING become STOP. Returns their ids."""
        ...

    async def delete_untouched_since(self, cutoff: datetime) -> list[tuple[str, str]]:
        """Delete sessions last updated before `cutoff`; returns the (id, owner) of each."""
        ...


def check_page(limit: int | None, offset: int = 0) -> None:
    """Refuse a negative limit or offset (InvalidRequest)."""
    if limit is not None and limit < 0:
        raise InvalidRequest(f"limit must be 0 or more, not {limit}")
    if offset < 0:
        raise InvalidRequest(f"offset must be 0 or more, not {offset}")


def as_partial(message: Message) -> Message:
    """The message as a streaming partial is stored: marked interrupted."""
    if message.status is MessageStatus.INTERRUPTED:
        return message
    return message.model_copy(update={"status": MessageStatus.INTERRUPTED})


def newest_first_key(record: SessionRecord) -> tuple[datetime, datetime, str]:
    return (record.updated_at, record.created_at, record.id)


class MemoryStore:
    """A `SessionStore` that keeps everything in this object: for tests, and for running
    without persistence. Nothing survives the process. Usable without `open()`."""

    def __init__(self, *, clock: Clock = utcnow) -> None:
        self._clock = clock
        self._sessions: dict[str, SessionRecord] = {}
        self._messages: dict[str, list[Message]] = {}
        self._queued: dict[str, dict[str, Message]] = {}

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def open(self) -> None:
        return None

    async def close(self) -> None:
        return None

    def _owned(self, session_id: str, owner: str) -> SessionRecord | None:
        record = self._sessions.get(session_id)
        return record if record is not None and record.owner == owner else None

    def _history(self, session_id: str) -> list[Message]:
        if session_id not in self._sessions:
            raise StoreError(f"no session {session_id!r}")
        return self._messages[session_id]

    def _touch(self, session_id: str) -> None:
        record = self._sessions[session_id]
        now = self._clock()
        if now > record.updated_at:
            self._sessions[session_id] = record.model_copy(update={"updated_at": now})

    async def create_session(self, record: SessionRecord) -> None:
        if record.id in self._sessions:
            raise StoreError(f"a session with id {record.id!r} already exists")
        self._sessions[record.id] = record
        self._messages[record.id] = []

    async def update_session(self, record: SessionRecord) -> None:
        stored = self._owned(record.id, record.owner)
        if stored is None:
            raise StoreError(f"no session {record.id!r} owned by {record.owner!r}")
        self._sessions[record.id] = record.model_copy(update={"created_at": stored.created_at})

    async def get_session(self, session_id: str, *, owner: str) -> SessionRecord | None:
        return self._owned(session_id, owner)

    async def list_sessions(
        self, owner: str, *, query: str | None = None, limit: int = 200, offset: int = 0
    ) -> list[SessionRecord]:
        check_page(limit, offset)
        needle = query.casefold() if query else None
        found = [
            record
            for record in self._sessions.values()
            if record.owner == owner and (needle is None or needle in record.title.casefold())
        ]
        found.sort(key=newest_first_key, reverse=True)
        return found[offset : offset + limit]

    async def delete_session(self, session_id: str, *, owner: str) -> bool:
        if self._owned(session_id, owner) is None:
            return False
        del self._sessions[session_id]
        del self._messages[session_id]
        self._queued.pop(session_id, None)
        return True

    async def rename_session(self, session_id: str, title: str, *, owner: str) -> bool:
        record = self._owned(session_id, owner)
        if record is None:
            return False
        self._sessions[session_id] = record.model_copy(update={"title": title})
        self._touch(session_id)
        return True

    def _put(self, session_id: str, message: Message, *, partial: bool) -> None:
        history = self._history(session_id)
        for index, existing in enumerate(history):
            if existing.id == message.id:
                if partial and existing.status is not MessageStatus.INTERRUPTED:
                    return
                history[index] = message
                break
        else:
            history.append(message)
        self._unqueue(session_id, (message.id,))
        self._touch(session_id)

    def _unqueue(self, session_id: str, ids: Iterable[str]) -> None:
        queued = self._queued.get(session_id)
        if queued:
            for message_id in ids:
                queued.pop(message_id, None)

    async def append_message(self, session_id: str, message: Message) -> None:
        self._put(session_id, message, partial=False)

    async def upsert_partial(self, session_id: str, message: Message) -> None:
        self._put(session_id, as_partial(message), partial=True)

    async def queue_message(self, session_id: str, message: Message) -> None:
        history = self._history(session_id)
        if all(stored.id != message.id for stored in history):
            self._queued.setdefault(session_id, {})[message.id] = message

    async def load_queued(self) -> dict[str, list[Message]]:
        return {sid: list(queued.values()) for sid, queued in self._queued.items() if queued}

    async def load_messages(self, session_id: str, *, limit: int | None = None) -> list[Message]:
        check_page(limit)
        history = self._messages.get(session_id, [])
        if limit is None:
            return list(history)
        return history[max(len(history) - limit, 0) :] if limit else []

    async def count_messages(self, session_id: str) -> int:
        return len(self._messages.get(session_id, []))

    async def replace_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        self._history(session_id)
        ids = [message.id for message in messages]
        if len(set(ids)) != len(ids):
            raise StoreError("replace_messages got two messages with the same id")
        self._messages[session_id] = list(messages)
        self._unqueue(session_id, ids)
        self._touch(session_id)

    async def mark_interrupted_runs(self) -> list[str]:
        ids = [sid for sid, record in self._sessions.items() if record.state in LIVE_STATES]
        for sid in ids:
            stopped = self._sessions[sid].model_copy(update={"state": InterpreterState.STOP})
            self._sessions[sid] = stopped
        return ids

    async def delete_untouched_since(self, cutoff: datetime) -> list[tuple[str, str]]:
        old = [(sid, r.owner) for sid, r in self._sessions.items() if r.updated_at < cutoff]
        for sid, _owner in old:
            del self._sessions[sid]
            del self._messages[sid]
            self._queued.pop(sid, None)
        return old


async def apply_retention(
    store: SessionStore, *, days: int | None, now: datetime | None = None
) -> list[tuple[str, str]]:
    """Delete sessions nobody touched for `days` days; returns the (id, owner) of each.
    None (the default setting) keeps everything. ConfigError for a period shorter than one
    day. (Their working folders are the caller's: `SessionManager.expire` deletes both.)"""
    if days is None:
        return []
    if days < 1:
        raise ConfigError(f"retention must be at least 1 day, not {days}; omit it to keep all")
    cutoff = (now or utcnow()) - timedelta(days=days)
    deleted = await store.delete_untouched_since(cutoff)
    if deleted:
        logger.info("retention: deleted %d session(s) untouched for %d days", len(deleted), days)
    return deleted
