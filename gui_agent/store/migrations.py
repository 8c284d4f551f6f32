"""The SQLite store's schema, as forward migrations kept in `PRAGMA user_version`.

`MIGRATIONS[i]` takes a database from version `i` to version `i + 1`; version 0 is an empty
file. At start-up every missing step runs inside one transaction, so a failure leaves the
database as it was. Never edit a step that has shipped: add a new one.
"""

from __future__ import annotations

import logging
from pathlib import Path

import aiosqlite

from gui_agent.exceptions import StoreVersionError

logger = logging.getLogger(__name__)

V1: tuple[str, ...] = (
    """
    CREATE TABLE sessions (
        id TEXT PRIMARY KEY,
        owner TEXT NOT NULL,
        title TEXT NOT NULL DEFAULT '',
        agent TEXT NOT NULL,
        model TEXT,
        settings TEXT NOT NULL,
        autochat TEXT NOT NULL,
        state TEXT NOT NULL,
        usage TEXT NOT NULL,
        goal TEXT,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
    )
    """,
    """
    CREATE TABLE messages (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        id TEXT NOT NULL,
        role TEXT NOT NULL,
        type TEXT NOT NULL,
        data TEXT NOT NULL,
        UNIQUE (session_id, id)
    )
    """,
    "CREATE UNIQUE INDEX messages_session_seq ON messages (session_id, seq)",
)
"""Version 1: sessions and messages; a message row holds the whole Message as JSON in `data`."""

V2: tuple[str, ...] = (
    "ALTER TABLE messages ADD COLUMN status TEXT NOT NULL DEFAULT 'complete'",
    "UPDATE messages SET status = COALESCE(json_extract(data, '$.status'), 'complete')",
    "CREATE INDEX sessions_owner_updated ON sessions (owner, updated_at)",
)
"""Version 2: a `status` column on messages (backfilled from the JSON) and the index the
session list is served from."""

V3: tuple[str, ...] = (
    """
    CREATE TABLE queued (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        id TEXT NOT NULL,
        data TEXT NOT NULL,
        PRIMARY KEY (session_id, id)
    )
    """,
)
"""Version 3: the messages a person sent while a turn ran, waiting for the agent to take
them up (in `rowid` order); each leaves the table as it enters the history."""

MIGRATIONS: tuple[tuple[str, ...], ...] = (V1, V2, V3)
SCHEMA_VERSION = len(MIGRATIONS)
"""The schema version this program writes."""


async def database_version(db: aiosqlite.Connection) -> int:
    async with db.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    return int(row[0]) if row is not None else 0


async def _has_foreign_tables(db: aiosqlite.Connection) -> bool:
    query = "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    async with db.execute(query) as cursor:
        row = await cursor.fetchone()
    return row is not None and int(row[0]) > 0


async def migrate(db: aiosqlite.Connection, *, path: Path) -> int:
    """Bring the database at `path` up to `SCHEMA_VERSION`; returns the version it was at.

    `db` must be in autocommit mode (isolation_level=None): this function opens and commits
    its own transaction. Raises StoreVersionError for a database written by a newer program
    and for an SQLite file that some other program owns.
    """
    current = await database_version(db)
    if current > SCHEMA_VERSION:
        raise StoreVersionError(
            f"database version {current} is newer than this program supports "
            f"({SCHEMA_VERSION}); upgrade GuiAgent or point --data-dir elsewhere ({path})"
        )
    if current == SCHEMA_VERSION:
        return current
    if current == 0 and await _has_foreign_tables(db):
        raise StoreVersionError(
            f"{path} is an SQLite database but not a GuiAgent store; point --data-dir elsewhere"
        )
    await db.execute("BEGIN IMMEDIATE")
    try:
        for version in range(current, SCHEMA_VERSION):
            for statement in MIGRATIONS[version]:
                await db.execute(statement)
            logger.info("store %s: migrated schema to version %d", path, version + 1)
        # user_version lives in the database header and is part of this transaction.
        await db.execute(f"PRAGMA user_version = {SCHEMA_VERSION:d}")
        await db.commit()
    except BaseException:
        await db.rollback()
        raise
    return current
