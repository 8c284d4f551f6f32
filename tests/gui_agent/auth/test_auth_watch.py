"""Watching the users file: a running server learns who `gui-agent users remove` took out
(another process), reading the file only when it changed, and a missing or broken file
never counts as "everyone left"."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gui_agent.auth import UserDB, UsersChange, UsersWatcher
from gui_agent.exceptions import ConfigError

CLI = Path(sys.executable).with_name("gui-agent")
PASSWORD = "correct horse battery"


class CountingUserDB(UserDB):
    """The real users file, counting how often it is read."""

    reads = 0

    def fingerprints(self, *, missing_ok: bool = True) -> dict[str, str]:
        self.reads += 1
        return super().fingerprints(missing_ok=missing_ok)


@pytest.fixture
def users(tmp_path: Path) -> CountingUserDB:
    db = CountingUserDB(tmp_path / "users.json")
    for name in ("alice", "bob"):
        db.add(name, PASSWORD)
    return db


class Changes:
    """An `on_change` that keeps what it was told and wakes whoever waits for it."""

    def __init__(self) -> None:
        self.seen: list[UsersChange] = []
        self.arrived = asyncio.Event()

    async def __call__(self, change: UsersChange) -> None:
        self.seen.append(change)
        self.arrived.set()

    async def next(self) -> UsersChange:
        async with asyncio.timeout(30):  # a hang guard, not a timing claim
            await self.arrived.wait()
        self.arrived.clear()
        return self.seen[-1]


def cli(*args: str, stdin: str | None = None) -> None:
    command = [str(CLI), "users", *args]
    done = subprocess.run(
        command, input=stdin, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr


def write_private(path: Path, text: str) -> None:
    """Replace the file as an editor would, keeping it private (0600)."""
    temp = path.with_name(path.name + ".edit")
    temp.write_text(text)
    os.chmod(temp, 0o600)
    os.replace(temp, path)


async def test_the_cli_removing_and_adding_back_a_user_is_reported(users: UserDB) -> None:
    changes = Changes()
    watcher = UsersWatcher(users, on_change=changes, interval_s=0.05)
    await watcher.start()
    try:
        assert watcher.names == {"alice", "bob"}
        await asyncio.to_thread(cli, "remove", "bob", "--auth-file", str(users.path))
        assert await changes.next() == UsersChange(removed=frozenset({"bob"}), added=frozenset())
        assert watcher.names == {"alice"}
        add = ("add", "bob", "--password-stdin", "--auth-file", str(users.path))
        await asyncio.to_thread(cli, *add, stdin=PASSWORD + "\n")
        assert await changes.next() == UsersChange(removed=frozenset(), added=frozenset({"bob"}))
    finally:
        await watcher.close()
    assert len(changes.seen) == 2


async def test_a_new_password_is_reported(users: UserDB) -> None:
    changes = Changes()
    watcher = UsersWatcher(users, on_change=changes, interval_s=0.05)
    await watcher.start()
    try:
        await asyncio.to_thread(users.add, "alice", "a brand new one", replace=True)
        assert await changes.next() == UsersChange(
            removed=frozenset(), added=frozenset(), password_changed=frozenset({"alice"})
        )
        assert watcher.names == {"alice", "bob"}
        # The same password set again is a new hash (new salt): old logins end all the same.
        await asyncio.to_thread(users.add, "alice", "a brand new one", replace=True)
        assert (await changes.next()).password_changed == {"alice"}
    finally:
        await watcher.close()
    assert len(changes.seen) == 2


async def test_the_file_is_read_again_only_when_it_changed(users: CountingUserDB) -> None:
    changes = Changes()
    watcher = UsersWatcher(users, on_change=changes)
    await watcher.start()  # (no task needed: `check` is one look)
    await watcher.close()
    reads = users.reads
    for _ in range(5):
        assert await watcher.check() is None
    assert users.reads == reads  # five looks, no read
    users.add("carol", PASSWORD)
    change = await watcher.check()
    assert change == UsersChange(removed=frozenset(), added=frozenset({"carol"}))
    assert users.reads == reads + 1
    write_private(users.path, users.path.read_text())  # rewritten, same users
    assert await watcher.check() is None
    assert users.reads == reads + 2 and changes.seen == [change]


async def test_a_missing_or_broken_file_keeps_the_last_good_names(
    users: UserDB, caplog: pytest.LogCaptureFixture
) -> None:
    changes = Changes()
    watcher = UsersWatcher(users, on_change=changes)
    await watcher.start()
    good = users.path.read_text()
    bob_gone = json.dumps({"alice": json.loads(good)["alice"]})
    with caplog.at_level(logging.WARNING, logger="gui_agent.auth.watch"):
        write_private(users.path, good[: len(good) // 2])  # a hand edit, half saved
        assert await watcher.check() is None
        assert await watcher.check() is None  # unchanged: not read, not warned again
        users.path.unlink()
        assert await watcher.check() is None
        write_private(users.path, "[1, 2, 3]")
        assert await watcher.check() is None
        users.path.write_text(bob_gone)
        os.chmod(users.path, 0o644)  # readable by others: refused like a broken file
        assert await watcher.check() is None
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 4, warnings
    assert "is not a valid users file" in warnings[0] and "missing" in warnings[1]
    assert "can be read by other users" in warnings[3]
    assert all("keeping the 2 users last read well" in w for w in warnings)
    assert watcher.names == {"alice", "bob"} and changes.seen == []

    os.chmod(users.path, 0o600)
    removed = await watcher.check()
    assert removed == UsersChange(removed=frozenset({"bob"}), added=frozenset())
    assert watcher.names == {"alice"}


async def test_a_failed_on_change_is_reported_again_and_watching_goes_on(
    users: UserDB, caplog: pytest.LogCaptureFixture
) -> None:
    calls: list[UsersChange] = []
    handled = asyncio.Event()

    async def flaky(change: UsersChange) -> None:
        calls.append(change)
        if len(calls) == 1:
            raise RuntimeError("the first try fails")
        handled.set()

    watcher = UsersWatcher(users, on_change=flaky, interval_s=0.05)
    await watcher.start()
    try:
        with caplog.at_level(logging.ERROR, logger="gui_agent.auth.watch"):
            users.remove("bob")
            async with asyncio.timeout(30):
                await handled.wait()
    finally:
        await watcher.close()
    assert calls == [UsersChange(removed=frozenset({"bob"}), added=frozenset())] * 2
    assert "the first try fails" in caplog.text
    assert watcher.names == {"alice"}


async def test_closing_ends_the_watching_task(users: UserDB) -> None:
    watcher = UsersWatcher(users, on_change=Changes(), interval_s=0.05)
    await watcher.start()
    assert watcher.running
    tasks = {t for t in asyncio.all_tasks() if t.get_name() == "users-file-watch"}
    assert len(tasks) == 1
    await watcher.close()
    assert not watcher.running and all(task.done() for task in tasks)
    await watcher.close()  # twice is harmless
    with pytest.raises(ConfigError):
        UsersWatcher(users, on_change=Changes(), interval_s=0)


async def test_looks_are_one_at_a_time_so_a_second_one_returns_after_the_change_applied(
    users: UserDB,
) -> None:
    """A request that finds its user gone calls `check` while the watcher's own look may be
    applying that very change: it returns only once that is done, and nothing is applied
    twice. Before `start` there is nothing to compare with: no look."""
    applied: list[UsersChange] = []
    release = asyncio.Event()

    async def slow(change: UsersChange) -> None:
        await release.wait()  # e.g. stopping the removed user's turns
        applied.append(change)

    watcher = UsersWatcher(users, on_change=slow)
    users.remove("bob")
    assert await watcher.check() is None  # not started
    await watcher.start()
    await watcher.close()  # (no task needed: `check` is one look)
    users.remove("alice")
    first = asyncio.create_task(watcher.check())
    second = asyncio.create_task(watcher.check())
    await asyncio.sleep(0.05)
    assert not first.done() and not second.done()  # the second waits for the first
    release.set()
    assert await first == UsersChange(removed=frozenset({"alice"}), added=frozenset())
    assert await second is None
    assert applied == [UsersChange(removed=frozenset({"alice"}), added=frozenset())]
