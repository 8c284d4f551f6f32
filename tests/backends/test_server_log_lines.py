"""What the server logs stays one printable line: the names of users whose entry in the users
file changed (a file edited by hand), and the words of a store that failed. A newline or an
escape in them must not forge a log record or rewrite the console."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import pytest

from backends.server import _keep_retention, _Removals
from gui_agent.auth.watch import UsersChange
from gui_agent.exceptions import StoreError
from tests.gui_agent.helpers import scripted_manager


async def test_users_added_removed_or_given_a_new_password_are_named_escaped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="backends.server")
    manager = scripted_manager(tmp_path)
    await manager.start()
    try:
        change = UsersChange(
            added=frozenset({"ann\n2030-01-01 INFO root: eve is back"}),
            removed=frozenset({"bob\x1b[2J"}),
            password_changed=frozenset({"cy\u2028ril"}),
        )
        await _Removals(manager, page=None).apply(change)
    finally:
        await manager.close()
    lines = [
        logging.Formatter("%(message)s").format(r)
        for r in caplog.records
        if r.name == "backends.server"
    ]
    assert len(lines) == 3 and all(line.isprintable() for line in lines), lines
    assert "ann\\n2030-01-01 INFO root: eve is back is in the users file again" in lines[0]
    assert lines[1].startswith("cy\\u2028ril has a new password")
    assert lines[2].startswith("bob\\x1b[2J was removed from the users file")


class FailingSweeps:
    """A manager whose retention sweep fails once, its store's words quoted, then is
    stopped (as the server's shutdown stops it)."""

    def __init__(self) -> None:
        self.sweeps = 0

    async def expire(self, *, days: int | None) -> int:
        self.sweeps += 1
        if self.sweeps == 1:
            raise StoreError("disk said:\n2030-01-01 INFO root: all swept \x1b[2J")
        raise asyncio.CancelledError


async def test_a_failed_retention_sweep_is_logged_on_one_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sweeps = FailingSweeps()
    with pytest.raises(asyncio.CancelledError):
        await _keep_retention(sweeps, 30, 0)  # type: ignore[arg-type]
    assert sweeps.sweeps == 2, "the next sweep runs after a failed one"
    [record] = [r for r in caplog.records if "the sweep failed" in r.getMessage()]
    line = logging.Formatter("%(message)s").format(record)
    assert line.isprintable()
    assert line.endswith("disk said:\\n2030-01-01 INFO root: all swept \\x1b[2J")
