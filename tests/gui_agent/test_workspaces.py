"""A chat's working folder goes with the chat: deleted with it, by hand or by retention."""

from __future__ import annotations

import os
import stat
from datetime import timedelta
from pathlib import Path

from connectors.scripted import ScriptedModel
from gui_agent import SessionManager, StaticCatalog
from gui_agent.store import SQLiteStore
from gui_agent.workspaces import remove_session_folder, session_folder
from schema.messages import utcnow


def manager(tmp_path: Path) -> SessionManager:
    return SessionManager(
        models=StaticCatalog(ScriptedModel(["ok"] * 4, name="scripted")),
        store=SQLiteStore(tmp_path / "sessions.db"),
        workspace_root=tmp_path / "work",
    )


def fill(folder: Path, outside: Path) -> None:
    """What code run in a chat leaves: files, a read-only folder, a link out of the folder."""
    (folder / "data").mkdir(parents=True)
    (folder / "data" / "report.csv").write_text("a,b\n")
    (folder / "data" / "sealed").mkdir()
    (folder / "data" / "sealed" / "x.txt").write_text("x")
    os.chmod(folder / "data" / "sealed", stat.S_IRUSR | stat.S_IXUSR)
    (folder / "elsewhere").symlink_to(outside)


async def test_deleting_a_chat_deletes_its_working_folder_and_nothing_else(
    tmp_path: Path,
) -> None:
    outside = tmp_path / "keep"
    outside.mkdir()
    (outside / "precious.txt").write_text("mine")
    m = manager(tmp_path)
    await m.start()
    try:
        doomed = await m.create("alice")
        kept = await m.create("alice")
        _ = [e async for e in doomed.chat("make files")]
        assert doomed.session.workdir is not None and kept.session.workdir is not None
        fill(doomed.session.workdir, outside)
        kept.session.workdir.mkdir(parents=True)
        (kept.session.workdir / "notes.txt").write_text("keep me")

        await m.delete(doomed.id, "alice")

        assert not doomed.session.workdir.exists()
        assert (kept.session.workdir / "notes.txt").read_text() == "keep me"
        assert (outside / "precious.txt").read_text() == "mine"  # a link is not followed
    finally:
        await m.close()


async def test_retention_deletes_the_working_folders_of_the_chats_it_deletes(
    tmp_path: Path,
) -> None:
    m = manager(tmp_path)
    await m.start()
    try:
        old = await m.create("bob")
        _ = [e async for e in old.chat("hello")]
        assert old.session.workdir is not None
        fill(old.session.workdir, tmp_path)
        # Nothing is old enough yet: the folder stays.
        assert await m.expire(days=1) == 0
        assert old.session.workdir.is_dir()
        assert await m.expire(days=1, now=utcnow() + timedelta(days=2)) == 1
        assert not old.session.workdir.exists()
        assert (tmp_path / "work").is_dir()  # the root of every folder stays
    finally:
        await m.close()


def test_a_folder_that_is_a_link_is_unlinked_not_emptied(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.mkdir()
    (target / "f.txt").write_text("stays")
    folder = session_folder(tmp_path / "work", "alice", "abc")
    folder.parent.mkdir(parents=True)
    folder.symlink_to(target)
    assert remove_session_folder(tmp_path / "work", "alice", "abc")
    assert not folder.exists() and (target / "f.txt").read_text() == "stays"
    assert not remove_session_folder(tmp_path / "work", "alice", "abc")  # nothing left


def test_names_cannot_lead_the_folder_out_of_the_root(tmp_path: Path) -> None:
    root = tmp_path / "work"
    for owner, session_id in [("../..", "x"), ("alice", "../../etc"), ("..", ".."), ("", "")]:
        folder = session_folder(root, owner, session_id)
        assert folder.resolve().is_relative_to(root.resolve()), folder
        assert folder.parent.parent == root
