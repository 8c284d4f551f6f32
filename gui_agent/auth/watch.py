"""Watching the users file, so a running server learns who was removed (or added back), and
whose password was set anew.

`gui-agent users remove NAME` is another process: it rewrites the users file and exits. A
server that should stop that person's work has to notice. `UsersWatcher` does, cheaply:
one task per server looks at the file's identity (device, inode, size, modification and
change times) every `interval_s` seconds, and reads the file only when that changed. It
then calls `on_change` with the names that left, the names that came back, and the names
whose password hash changed (`UserDB.add(..., replace=True)`), by comparing password
fingerprints (`gui_agent.auth.users.password_fingerprint`).

A users file that is missing, unreadable, or not valid JSON (a hand edit half saved) does
not count as "everyone left": the watcher logs a warning, keeps the last names it read
well, and reads again once the file changes. (Requests are still checked against the file
as it is, so such a file refuses new logins and API calls meanwhile.)
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from gui_agent.auth.users import UserDB
from gui_agent.exceptions import AuthError, ConfigError

__all__ = ["USERS_WATCH_S", "UsersChange", "UsersWatcher"]

logger = logging.getLogger(__name__)

USERS_WATCH_S = 1.0
"""How often the users file's identity is looked at (one `stat`; read only when changed)."""

_FileKey = tuple[int, int, int, int, int]
"""(device, inode, size, mtime_ns, ctime_ns): changes whenever the file is written."""


@dataclass(frozen=True, slots=True)
class UsersChange:
    """Who left the users file, who came back, and who stayed with a new password, since
    the last good read."""

    removed: frozenset[str]
    added: frozenset[str]
    password_changed: frozenset[str] = frozenset()


OnChange = Callable[[UsersChange], Awaitable[None]]


def _file_key(path: os.PathLike[str] | str) -> _FileKey | None:
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return None
    return (found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


class UsersWatcher:
    """One per server: reports changes of the users file's names to `on_change`.

    `start()` reads the file (AuthError if it cannot) and starts the watching task;
    `close()` cancels it and waits for it to end. `on_change` runs in that task, one change
    at a time; an exception from it is logged and watching goes on.
    """

    def __init__(
        self, users: UserDB, *, on_change: OnChange, interval_s: float = USERS_WATCH_S
    ) -> None:
        if interval_s <= 0:
            raise ConfigError(f"the users file check interval must be positive, not {interval_s}")
        self.users = users
        self.interval_s = interval_s
        self._on_change = on_change
        self._users: dict[str, str] = {}  # name -> password fingerprint, last good read
        self._key: _FileKey | None = None
        self._trouble: str | None = None  # what was wrong with the file at the last look
        self._task: asyncio.Task[None] | None = None
        self._started = False
        self._looking = asyncio.Lock()  # one look at a time: the task's, or a request's

    @property
    def names(self) -> frozenset[str]:
        """The names of the last good read."""
        return frozenset(self._users)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        if self._task is not None:
            raise RuntimeError("the users watcher was started already")
        self._key = await asyncio.to_thread(_file_key, self.users.path)
        self._users = await self._read()
        self._started = True
        self._task = asyncio.create_task(self._watch(), name="users-file-watch")

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        await asyncio.wait({task})

    async def check(self) -> UsersChange | None:
        """Look at the file once: the change, after `on_change` has run, or None.

        Looks are one at a time. So a caller that learned of a change some other way (a
        request whose token names a user the file no longer has) can call this and know,
        when it returns, that the change was applied, by this look or by the one before
        that held it up. None before `start` (there is nothing to compare with yet).

        If `on_change` raises, the change is not taken as done: the next look reads the
        file again and reports it again."""
        if not self._started:
            return None
        async with self._looking:
            return await self._look()

    async def _look(self) -> UsersChange | None:
        key = await asyncio.to_thread(_file_key, self.users.path)
        if key == self._key:
            return None
        self._key = key
        if key is None:
            self._warn(f"the users file {self.users.path} is missing")
            return None
        try:
            users = await self._read()
        except AuthError as exc:
            self._warn(str(exc))
            return None
        if self._trouble is not None:
            logger.info("the users file %s reads well again", self.users.path)
            self._trouble = None
        before, after = self.names, frozenset(users)
        change = UsersChange(
            removed=before - after,
            added=after - before,
            password_changed=frozenset(
                name for name in before & after if users[name] != self._users[name]
            ),
        )
        if not (change.removed or change.added or change.password_changed):
            self._users = users
            return None
        logger.info(
            "users file %s: %d removed, %d added, %d with a new password",
            self.users.path,
            len(change.removed),
            len(change.added),
            len(change.password_changed),
        )
        try:
            await self._on_change(change)
        except BaseException:
            self._key = None  # report it again on the next look
            raise
        self._users = users
        return change

    async def _read(self) -> dict[str, str]:
        return await asyncio.to_thread(self.users.fingerprints, missing_ok=False)

    def _warn(self, problem: str) -> None:
        """Warn when the file goes wrong, not on every look while it stays wrong the same
        way."""
        if problem != self._trouble:
            logger.warning(
                "%s; keeping the %d users last read well, until the file changes",
                problem,
                len(self._users),
            )
        self._trouble = problem

    async def _watch(self) -> None:
        while True:
            await asyncio.sleep(self.interval_s)
            try:
                await self.check()
            except asyncio.CancelledError:
                raise
            except Exception:  # one bad look (or a failing on_change) must not end watching
                logger.exception("checking the users file %s failed", self.users.path)
