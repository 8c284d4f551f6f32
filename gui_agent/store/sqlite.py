"""The default session store: one SQLite file, written through aiosqlite.

The database runs in WAL mode with `synchronous=NORMAL`: every committed write survives the
process being killed (not necessarily a power cut). Each message is committed on its own, so
a message is durable once `append_message` returns. One process at a time: `<db>.lock` is
held with `flock` while the store is open, and a second opener gets StoreLocked naming the
holder's pid. Times are stored as integer microseconds since the epoch (UTC).

Text that cannot be encoded as UTF-8 (a lone surrogate: a client that cut a string in the
middle of an emoji, a broken JSON escape) is stored with U+FFFD in its place, in titles,
goals, settings, message ids and messages alike, rather than failing every later save of the
session. A value nested deeper than can be serialized is refused with a StoreError; one
that was saved is always read back (see `_message_from_json`).
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import logging
import os
import sqlite3
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager, suppress
from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import aiosqlite
from pydantic import BaseModel, ValidationError

from gui_agent.exceptions import StoreError, StoreLocked, StoreVersionError
from gui_agent.log_text import loggable
from gui_agent.store.base import LIVE_STATES, Clock, as_partial, check_page
from gui_agent.store.migrations import migrate
from schema import (
    AgentName,
    AutoChatSettings,
    InterpreterState,
    Message,
    SessionRecord,
    SessionSettings,
    Usage,
    valid_text,
)
from schema.messages import utcnow

__all__ = ["DB_FILE_NAME", "SQLiteStore", "default_data_dir"]

logger = logging.getLogger(__name__)

DB_FILE_NAME = "gui-agent.db"
BUSY_TIMEOUT_MS = 5000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_CORRUPT_CODES = (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB)

_SESSION_COLUMNS = (
    "id, owner, title, agent, model, settings, autochat, state, usage, goal, created_at, updated_at"
)
_UPSERT_MESSAGE = """
    INSERT INTO messages (session_id, seq, id, role, type, status, data)
    VALUES (?, (SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?),
            ?, ?, ?, ?, ?)
    ON CONFLICT (session_id, id) DO UPDATE SET
        role = excluded.role, type = excluded.type, status = excluded.status,
        data = excluded.data
"""


def default_data_dir(env: Mapping[str, str] = os.environ) -> Path:
    """Where GuiAgent keeps its data: `$GUI_AGENT_DATA_DIR`, else `$XDG_DATA_HOME/gui-agent`,
    else `~/.local/share/gui-agent`."""
    if explicit := env.get("GUI_AGENT_DATA_DIR"):
        return Path(explicit).expanduser()
    if xdg := env.get("XDG_DATA_HOME"):
        return Path(xdg).expanduser() / "gui-agent"
    return Path.home() / ".local" / "share" / "gui-agent"


def to_micros(moment: datetime) -> int:
    """A datetime as integer microseconds since the epoch; naive times are taken as UTC."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // _MICROSECOND


def from_micros(value: int) -> datetime:
    return _EPOCH + timedelta(microseconds=value)


def _casefold(value: object) -> str | None:
    return value.casefold() if isinstance(value, str) else None


def _is_corruption(exc: sqlite3.Error) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return code is not None and code & 0xFF in _CORRUPT_CODES


class _FileLock:
    """An exclusive `flock` on a file holding the owner's pid; released by the kernel when the
    process dies, so a crash never leaves a stale lock."""

    def __init__(self, path: Path, *, guarding: Path) -> None:
        self.path = path
        self._guarding = guarding
        self._fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            who = (
                "another store in this process"
                if holder == str(os.getpid())
                else f"another GuiAgent process (pid {holder})"
            )
            raise StoreLocked(
                f"{self._guarding} is in use by {who}; "
                "stop that process or point --data-dir elsewhere"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._fd = fd

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)


class SQLiteStore:
    """A `SessionStore` in one SQLite file. Use `async with SQLiteStore(path) as store:` or
    call `open()` / `close()`."""

    def __init__(self, path: Path, *, clock: Clock = utcnow) -> None:
        self.path = Path(path)
        self._clock = clock
        self._lock_file = _FileLock(
            self.path.with_name(self.path.name + ".lock"), guarding=self.path
        )
        self._db: aiosqlite.Connection | None = None
        self._mutex: asyncio.Lock | None = None

    @classmethod
    def in_data_dir(cls, data_dir: Path, *, clock: Clock = utcnow) -> SQLiteStore:
        """The store at `<data_dir>/gui-agent.db`."""
        return cls(Path(data_dir) / DB_FILE_NAME, clock=clock)

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

    # -- lifecycle ----------------------------------------------------------------------

    async def open(self) -> None:
        if self._db is not None:
            raise StoreError(f"{self.path} is already open")
        try:
            await asyncio.to_thread(self._prepare_files)
        except OSError as exc:  # a folder that cannot be made or written, a file in the way
            raise StoreError(
                f"cannot open the store at {self.path}: {exc.strerror or exc}"
            ) from exc
        db: aiosqlite.Connection | None = None
        try:
            db = await aiosqlite.connect(self.path, isolation_level=None)
            db.row_factory = sqlite3.Row
            await db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS:d}")
            await db.execute("PRAGMA journal_mode = WAL")
            await db.execute("PRAGMA synchronous = NORMAL")
            await db.execute("PRAGMA foreign_keys = ON")
            await db.create_function("gui_casefold", 1, _casefold, deterministic=True)
            previous = await migrate(db, path=self.path)
        except BaseException as exc:
            if db is not None:
                await db.close()
            await asyncio.to_thread(self._lock_file.release)
            if isinstance(exc, sqlite3.Error):
                raise self._translate(exc, "open") from exc
            raise
        self._db = db
        self._mutex = asyncio.Lock()
        logger.info("store %s open (schema was version %d)", self.path, previous)

    def _prepare_files(self) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        # Conversations are private: a new database (and so its -wal and -shm files, which
        # SQLite creates with the database's mode) is readable by its owner only.
        with suppress(FileExistsError):
            os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        self._lock_file.acquire()

    async def close(self) -> None:
        db, self._db = self._db, None
        if db is None:
            return
        try:
            await db.close()
        finally:
            await asyncio.to_thread(self._lock_file.release)

    # -- plumbing -----------------------------------------------------------------------

    def _translate(self, exc: sqlite3.Error, action: str) -> StoreError:
        if _is_corruption(exc):
            return StoreVersionError(
                f"{self.path} is not a GuiAgent database or is damaged ({exc}); move it "
                "aside to start afresh, or point --data-dir elsewhere"
            )
        return StoreError(f"store {self.path}: {action} failed: {exc}")

    @contextmanager
    def _errors(self, action: str) -> Iterator[None]:
        try:
            yield
        except sqlite3.Error as exc:
            raise self._translate(exc, action) from exc
        except UnicodeEncodeError as exc:  # a key or id that no stored row can hold
            raise StoreError(f"store {self.path}: {action}: text is not valid Unicode") from exc
        except ValueError as exc:  # a field that does not validate, an unknown enum value
            raise StoreError(f"store {self.path}: {action}: unreadable row: {exc}") from exc

    @asynccontextmanager
    async def _read(self, action: str) -> AsyncIterator[aiosqlite.Connection]:
        if self._db is None or self._mutex is None:
            raise StoreError(f"store {self.path} is not open")
        async with self._mutex:
            with self._errors(action):
                yield self._db

    @asynccontextmanager
    async def _write(self, action: str) -> AsyncIterator[aiosqlite.Connection]:
        """One transaction, committed at the end of the block and rolled back on any error
        (cancellation included)."""
        async with self._read(action) as db:
            try:
                await db.execute("BEGIN IMMEDIATE")
                yield db
            except BaseException:
                # Statements already queued still run on aiosqlite's thread; the rollback is
                # queued after them and shielded so a second cancellation cannot skip it.
                await asyncio.shield(db.rollback())
                raise
            await db.execute("COMMIT")

    async def _rows(self, sql: str, params: Sequence[Any], *, action: str) -> list[sqlite3.Row]:
        async with self._read(action) as db:
            return list(await db.execute_fetchall(sql, params))

    async def _touch(self, db: aiosqlite.Connection, session_id: str) -> None:
        await db.execute(
            "UPDATE sessions SET updated_at = MAX(updated_at, ?) WHERE id = ?",
            (to_micros(self._clock()), session_id),
        )

    async def _require_session(self, db: aiosqlite.Connection, session_id: str) -> None:
        async with db.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)) as cursor:
            if await cursor.fetchone() is None:
                raise StoreError(f"no session {session_id!r}")

    # -- sessions -----------------------------------------------------------------------

    @staticmethod
    def _session_values(record: SessionRecord) -> tuple[Any, ...]:
        where = f"session {record.id!r}"
        model = record.settings.model
        return (
            record.owner,
            valid_text(record.title),
            record.agent.value,
            None if model is None else valid_text(model),
            _model_json(record.settings, where),
            _model_json(record.autochat, where),
            record.state.value,
            _model_json(record.usage, where),
            None if record.goal is None else valid_text(record.goal),
            to_micros(record.created_at),
            to_micros(record.updated_at),
        )

    @staticmethod
    def _session_from_row(row: sqlite3.Row) -> SessionRecord:
        return SessionRecord(
            id=row["id"],
            owner=row["owner"],
            title=row["title"],
            agent=AgentName(row["agent"]),
            settings=SessionSettings.model_validate_json(row["settings"]),
            autochat=AutoChatSettings.model_validate_json(row["autochat"]),
            state=InterpreterState(row["state"]),
            usage=Usage.model_validate_json(row["usage"]),
            goal=row["goal"],
            created_at=from_micros(row["created_at"]),
            updated_at=from_micros(row["updated_at"]),
        )

    def _sessions_from_rows(self, rows: Sequence[sqlite3.Row]) -> list[SessionRecord]:
        with self._errors("read sessions"):
            return [self._session_from_row(row) for row in rows]

    async def create_session(self, record: SessionRecord) -> None:
        try:
            async with self._write("create session") as db:
                await db.execute(
                    f"INSERT INTO sessions ({_SESSION_COLUMNS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (record.id, *self._session_values(record)),
                )
        except StoreError as exc:
            if isinstance(exc.__cause__, sqlite3.IntegrityError):
                raise StoreError(f"a session with id {record.id!r} already exists") from exc
            raise

    async def update_session(self, record: SessionRecord) -> None:
        *values, _created_at, updated_at = self._session_values(record)
        async with self._write("update session") as db:
            cursor = await db.execute(
                "UPDATE sessions SET owner = ?, title = ?, agent = ?, model = ?, settings = ?, "
                "autochat = ?, state = ?, usage = ?, goal = ?, updated_at = ? "
                "WHERE id = ? AND owner = ?",
                (*values, updated_at, record.id, record.owner),
            )
            if cursor.rowcount != 1:
                raise StoreError(f"no session {record.id!r} owned by {record.owner!r}")

    async def get_session(self, session_id: str, *, owner: str) -> SessionRecord | None:
        rows = await self._rows(
            f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE id = ? AND owner = ?",
            (session_id, owner),
            action="get session",
        )
        found = self._sessions_from_rows(rows)
        return found[0] if found else None

    async def list_sessions(
        self, owner: str, *, query: str | None = None, limit: int = 200, offset: int = 0
    ) -> list[SessionRecord]:
        check_page(limit, offset)
        sql = f"SELECT {_SESSION_COLUMNS} FROM sessions WHERE owner = ?"
        params: list[Any] = [owner]
        if query:
            sql += " AND instr(gui_casefold(title), ?) > 0"
            params.append(valid_text(query).casefold())
        sql += " ORDER BY updated_at DESC, created_at DESC, id DESC LIMIT ? OFFSET ?"
        params += [limit, offset]
        return self._sessions_from_rows(await self._rows(sql, params, action="list sessions"))

    async def delete_session(self, session_id: str, *, owner: str) -> bool:
        async with self._write("delete session") as db:
            cursor = await db.execute(
                "DELETE FROM sessions WHERE id = ? AND owner = ?", (session_id, owner)
            )
            return cursor.rowcount == 1

    async def rename_session(self, session_id: str, title: str, *, owner: str) -> bool:
        async with self._write("rename session") as db:
            cursor = await db.execute(
                "UPDATE sessions SET title = ? WHERE id = ? AND owner = ?",
                (valid_text(title), session_id, owner),
            )
            if cursor.rowcount != 1:
                return False
            await self._touch(db, session_id)
            return True

    # -- messages -----------------------------------------------------------------------

    @staticmethod
    def _message_values(message: Message) -> tuple[str, str, str, str, str]:
        return (
            valid_text(message.id),
            message.role.value,
            message.type.value,
            message.status.value,
            _model_json(message, f"message {message.id!r}"),
        )

    async def append_message(self, session_id: str, message: Message) -> None:
        async with self._write("append message") as db:
            await self._require_session(db, session_id)
            await db.execute(
                _UPSERT_MESSAGE, (session_id, session_id, *self._message_values(message))
            )
            await db.execute(
                "DELETE FROM queued WHERE session_id = ? AND id = ?",
                (session_id, valid_text(message.id)),
            )
            await self._touch(db, session_id)

    async def queue_message(self, session_id: str, message: Message) -> None:
        async with self._write("queue message") as db:
            await self._require_session(db, session_id)
            message_id = valid_text(message.id)
            await db.execute(
                "INSERT OR REPLACE INTO queued (session_id, id, data) SELECT ?, ?, ? "
                "WHERE NOT EXISTS (SELECT 1 FROM messages WHERE session_id = ? AND id = ?)",
                (
                    session_id,
                    message_id,
                    _model_json(message, f"message {message.id!r}"),
                    session_id,
                    message_id,
                ),
            )

    async def load_queued(self) -> dict[str, list[Message]]:
        rows = await self._rows(
            "SELECT session_id, data FROM queued ORDER BY rowid", (), action="load queued"
        )
        queued: dict[str, list[Message]] = {}
        for row in rows:
            session_id = str(row["session_id"])
            try:
                message = _message_from_json(row["data"])
            except ValueError as exc:  # one unreadable row must not stop the server starting
                logger.warning(
                    "store %s: a queued message of session %s cannot be read; left: %s",
                    self.path,
                    session_id,
                    loggable(exc),
                )
                continue
            queued.setdefault(session_id, []).append(message)
        return queued

    async def upsert_partial(self, session_id: str, message: Message) -> None:
        partial = as_partial(message)
        async with self._write("save partial message") as db:
            await self._require_session(db, session_id)
            await db.execute(
                _UPSERT_MESSAGE + " WHERE messages.status = ?",
                (session_id, session_id, *self._message_values(partial), partial.status.value),
            )
            await self._touch(db, session_id)

    async def load_messages(self, session_id: str, *, limit: int | None = None) -> list[Message]:
        check_page(limit)
        if limit is None:
            sql = "SELECT data FROM messages WHERE session_id = ? ORDER BY seq"
            params: tuple[Any, ...] = (session_id,)
        else:
            sql = (
                "SELECT data FROM (SELECT seq, data FROM messages WHERE session_id = ? "
                "ORDER BY seq DESC LIMIT ?) ORDER BY seq"
            )
            params = (session_id, limit)
        rows = await self._rows(sql, params, action="load messages")
        with self._errors("read messages"):
            return [_message_from_json(row["data"]) for row in rows]

    async def count_messages(self, session_id: str) -> int:
        rows = await self._rows(
            "SELECT count(*) FROM messages WHERE session_id = ?",
            (session_id,),
            action="count messages",
        )
        return int(rows[0][0])

    async def replace_messages(self, session_id: str, messages: Sequence[Message]) -> None:
        ids = [message.id for message in messages]
        if len(set(ids)) != len(ids):
            raise StoreError("replace_messages got two messages with the same id")
        async with self._write("replace messages") as db:
            await self._require_session(db, session_id)
            await db.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            await db.executemany(
                "INSERT INTO messages (session_id, seq, id, role, type, status, data) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (session_id, seq, *self._message_values(message))
                    for seq, message in enumerate(messages, start=1)
                ],
            )
            await db.execute(
                "DELETE FROM queued WHERE session_id = ? AND id IN "
                "(SELECT id FROM messages WHERE session_id = ?)",
                (session_id, session_id),
            )
            await self._touch(db, session_id)

    # -- start-up and retention ---------------------------------------------------------

    async def mark_interrupted_runs(self) -> list[str]:
        live = tuple(state.value for state in LIVE_STATES)
        async with self._write("mark interrupted runs") as db:
            rows = await db.execute_fetchall("SELECT id FROM sessions WHERE state IN (?, ?)", live)
            ids = [str(row["id"]) for row in rows]
            await db.execute(
                "UPDATE sessions SET state = ? WHERE state IN (?, ?)",
                (InterpreterState.STOP.value, *live),
            )
        if ids:
            logger.info("store %s: %d run(s) were interrupted by a restart", self.path, len(ids))
        return ids

    async def delete_untouched_since(self, cutoff: datetime) -> list[tuple[str, str]]:
        # One transaction: what is listed is what is deleted (no RETURNING, which SQLite
        # has only since 3.35).
        async with self._write("delete old sessions") as db:
            cursor = await db.execute(
                "SELECT id, owner FROM sessions WHERE updated_at < ?", (to_micros(cutoff),)
            )
            old = [(str(row[0]), str(row[1])) for row in await cursor.fetchall()]
            await db.executemany("DELETE FROM sessions WHERE id = ?", [(sid,) for sid, _ in old])
            return old


def _message_from_json(data: str) -> Message:
    """A stored message. pydantic's JSON reader stops at 200 levels of nesting, a little
    short of what its writer saves (a tool result holding a deep element tree): such a
    row is read through `json` instead, so every message saved is read back."""
    try:
        return Message.model_validate_json(data)
    except ValidationError as exc:
        if not any(error["type"] == "json_invalid" for error in exc.errors()):
            raise
    return Message.model_validate(json.loads(data))


def _model_json(model: BaseModel, where: str) -> str:
    """`model` as JSON. Text that cannot be encoded as UTF-8 (a lone surrogate that got past
    the entry points) is stored with U+FFFD in its place rather than losing what holds it;
    a value nested too deeply to serialize is a StoreError naming `where`."""
    try:
        return model.model_dump_json()
    except ValueError:  # PydanticSerializationError: a lone surrogate, or nesting too deep
        pass
    try:
        data = model.model_dump(mode="json")
    except ValueError as exc:
        raise StoreError(f"{where} cannot be saved: {exc}") from None
    logger.warning("%s holds text that is not valid Unicode; repaired", where)
    return valid_text(json.dumps(data, ensure_ascii=False))
