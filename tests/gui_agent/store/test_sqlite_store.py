"""The SQLite store on real files: reopening, migrations, refusals, and the process lock."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest

from gui_agent.exceptions import StoreError, StoreLocked, StoreVersionError
from gui_agent.store import DB_FILE_NAME, SCHEMA_VERSION, SQLiteStore, default_data_dir
from gui_agent.store.migrations import V1
from gui_agent.store.sqlite import to_micros
from schema import InterpreterState, Message, MessageStatus, Role, SessionRecord


def read_db(path: Path, sql: str) -> list[tuple[object, ...]]:
    with closing(sqlite3.connect(path)) as db:
        return db.execute(sql).fetchall()


async def test_everything_survives_closing_and_reopening(
    db_path: Path, every_type: list[Message]
) -> None:
    record = SessionRecord(owner="alice", title="kept", state=InterpreterState.RUNNING)
    async with SQLiteStore(db_path) as store:
        await store.create_session(record)
        for message in every_type:
            await store.append_message(record.id, message)
        await store.upsert_partial(
            record.id, Message(id="streaming", role=Role.ASSISTANT, content="half a sen")
        )

    async with SQLiteStore(db_path) as store:
        stored = await store.get_session(record.id, owner="alice")
        loaded = await store.load_messages(record.id)
        assert await store.mark_interrupted_runs() == [record.id]

    assert stored is not None and stored.updated_at >= record.updated_at  # appends touch it
    assert stored.model_copy(update={"updated_at": record.updated_at}) == record
    assert loaded[:-1] == every_type
    assert (loaded[-1].id, loaded[-1].content) == ("streaming", "half a sen")
    assert loaded[-1].status is MessageStatus.INTERRUPTED


async def test_database_is_wal_with_the_current_schema_and_private(db_path: Path) -> None:
    async with SQLiteStore(db_path) as store:
        await store.create_session(SessionRecord())
        wal = db_path.with_name(db_path.name + "-wal")
        for private in (db_path.parent, db_path, wal):
            assert os.stat(private).st_mode & 0o077 == 0, private

    assert read_db(db_path, "PRAGMA journal_mode") == [("wal",)]
    assert read_db(db_path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]


async def test_appending_finds_the_next_position_through_the_index(db_path: Path) -> None:
    async with SQLiteStore(db_path):
        pass
    plan = read_db(
        db_path, "EXPLAIN QUERY PLAN SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id=1"
    )
    assert "messages_session_seq" in str(plan)


async def test_an_empty_file_becomes_a_current_database(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.touch()
    async with SQLiteStore(db_path) as store:
        await store.create_session(SessionRecord(owner="alice"))
        assert len(await store.list_sessions("alice")) == 1
    assert read_db(db_path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]


async def test_a_version_1_database_is_migrated_and_keeps_its_data(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    record = SessionRecord(owner="alice", title="from v1")
    done = Message(role=Role.USER, content="hello")
    cut = Message(role=Role.ASSISTANT, content="hal", status=MessageStatus.INTERRUPTED)
    stamp = to_micros(datetime(2024, 1, 1, tzinfo=UTC))
    with sqlite3.connect(db_path) as db:
        for statement in V1:
            db.execute(statement)
        db.execute(
            "INSERT INTO sessions VALUES (?, ?, ?, ?, NULL, ?, ?, ?, ?, NULL, ?, ?)",
            (
                record.id,
                "alice",
                "from v1",
                record.agent.value,
                record.settings.model_dump_json(),
                record.autochat.model_dump_json(),
                "INIT",
                record.usage.model_dump_json(),
                stamp,
                stamp,
            ),
        )
        for seq, message in enumerate([done, cut], start=1):
            db.execute(
                "INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?)",
                (
                    record.id,
                    seq,
                    message.id,
                    message.role.value,
                    message.type.value,
                    message.model_dump_json(),
                ),
            )
        db.execute("PRAGMA user_version = 1")
    db.close()

    async with SQLiteStore(db_path) as store:
        assert await store.load_messages(record.id) == [done, cut]
        migrated = await store.get_session(record.id, owner="alice")
        assert migrated is not None and migrated.title == "from v1"

    assert read_db(db_path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert read_db(db_path, "SELECT status FROM messages ORDER BY seq") == [
        ("complete",),
        ("interrupted",),
    ]
    indexes = {row[1] for row in read_db(db_path, "PRAGMA index_list('sessions')")}
    assert "sessions_owner_updated" in indexes
    assert read_db(db_path, "SELECT count(*) FROM queued") == [(0,)]


async def test_a_database_from_a_newer_program_is_refused(db_path: Path) -> None:
    async with SQLiteStore(db_path):
        pass
    with sqlite3.connect(db_path) as db:
        db.execute("PRAGMA user_version = 99")
    db.close()

    for _ in range(2):  # the failed open released the lock: the second try is refused the same way
        with pytest.raises(StoreVersionError) as refused:
            await SQLiteStore(db_path).open()
        assert str(refused.value).startswith(
            f"database version 99 is newer than this program supports ({SCHEMA_VERSION}); "
            "upgrade GuiAgent or point --data-dir elsewhere"
        )


async def test_a_file_that_is_not_a_database_is_refused_clearly(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"these are my holiday notes, not a database\n" * 200)

    with pytest.raises(StoreVersionError, match="not a GuiAgent database or is damaged"):
        await SQLiteStore(db_path).open()
    assert db_path.read_bytes().startswith(b"these are my holiday notes")


async def test_another_programs_sqlite_file_is_refused(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    with sqlite3.connect(db_path) as db:
        db.execute("CREATE TABLE recipes (name TEXT)")
    db.close()

    with pytest.raises(StoreVersionError, match="not a GuiAgent store"):
        await SQLiteStore(db_path).open()
    assert read_db(db_path, "SELECT name FROM sqlite_master") == [("recipes",)]


async def test_a_second_opener_is_locked_out_until_the_first_closes(db_path: Path) -> None:
    first = SQLiteStore(db_path)
    await first.open()
    lock_file = db_path.with_name(db_path.name + ".lock")
    assert lock_file.read_text().strip() == str(os.getpid())

    with pytest.raises(StoreLocked) as refused:
        await SQLiteStore(db_path).open()
    assert str(refused.value) == (
        f"{db_path} is in use by another store in this process; "
        "stop that process or point --data-dir elsewhere"
    )

    await first.close()
    await first.close()  # closing twice is harmless
    async with SQLiteStore(db_path) as second:
        assert await second.list_sessions("local") == []


async def test_a_store_in_a_folder_it_cannot_create_fails_with_a_store_error(
    tmp_path: Path,
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("in the way")
    with pytest.raises(StoreError, match="cannot open the store at"):
        await SQLiteStore(blocker / "data" / "gui-agent.db").open()


async def test_using_a_closed_store_is_an_error(db_path: Path) -> None:
    store = SQLiteStore(db_path)
    with pytest.raises(StoreError, match="not open"):
        await store.list_sessions("alice")
    async with store:
        with pytest.raises(StoreError, match="already open"):
            await store.open()


def test_default_data_dir_follows_the_environment(tmp_path: Path) -> None:
    home = Path.home()
    assert default_data_dir({}) == home / ".local" / "share" / "gui-agent"
    assert default_data_dir({"XDG_DATA_HOME": str(tmp_path)}) == tmp_path / "gui-agent"
    both = {"XDG_DATA_HOME": str(tmp_path), "GUI_AGENT_DATA_DIR": str(tmp_path / "mine")}
    assert default_data_dir(both) == tmp_path / "mine"
    assert SQLiteStore.in_data_dir(tmp_path).path == tmp_path / DB_FILE_NAME


async def test_rows_hold_the_whole_message_and_its_status(db_path: Path) -> None:
    record = SessionRecord(owner="alice")
    async with SQLiteStore(db_path) as store:
        await store.create_session(record)
        await store.append_message(record.id, Message(role=Role.USER, content="hi"))
        await store.upsert_partial(record.id, Message(id="p", role=Role.ASSISTANT, content="h"))

    rows = read_db(db_path, "SELECT seq, id, role, type, status, data FROM messages ORDER BY seq")
    assert [row[:5] for row in rows][1] == (2, "p", "assistant", "message", "interrupted")
    assert json.loads(str(rows[1][5]))["content"] == "h"
    assert json.loads(str(rows[1][5]))["status"] == "interrupted"


async def test_a_failing_migration_leaves_the_database_as_it_was(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from gui_agent.store import migrations

    async with SQLiteStore(db_path) as store:
        await store.create_session(SessionRecord(owner="alice", title="precious"))
    broken = ("CREATE TABLE half_done (a TEXT)", "THIS IS NOT SQL")
    monkeypatch.setattr(migrations, "MIGRATIONS", (*migrations.MIGRATIONS, broken))
    monkeypatch.setattr(migrations, "SCHEMA_VERSION", SCHEMA_VERSION + 1)

    with pytest.raises(StoreError, match="open failed"):
        await SQLiteStore(db_path).open()

    assert read_db(db_path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert read_db(db_path, "SELECT name FROM sqlite_master WHERE name = 'half_done'") == []
    assert read_db(db_path, "SELECT title FROM sessions") == [("precious",)]


async def test_a_write_cancelled_mid_transaction_rolls_back_and_the_store_keeps_working(
    db_path: Path,
) -> None:
    cancel_next_write = False

    def clock() -> datetime:
        # Runs inside the append's transaction, after the message row was inserted.
        if cancel_next_write:
            task = asyncio.current_task()
            assert task is not None
            task.cancel()
        return datetime.now(UTC)

    record = SessionRecord(owner="alice")
    async with SQLiteStore(db_path, clock=clock) as store:
        await store.create_session(record)
        cancel_next_write = True
        with pytest.raises(asyncio.CancelledError):
            await store.append_message(record.id, Message(role=Role.USER, content="lost"))
        cancel_next_write = False

        kept = Message(role=Role.USER, content="kept")
        await store.append_message(record.id, kept)
        assert await store.load_messages(record.id) == [kept]
