"""A server killed mid-conversation loses nothing it had acknowledged."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from pathlib import Path

from gui_agent.store import SQLiteStore
from schema import MessageStatus

REPO_ROOT = Path(__file__).resolve().parents[3]

CHILD = r"""
import asyncio, sys
from pathlib import Path

from gui_agent.store import SQLiteStore
from schema import Message, Role, SessionRecord


async def main(path: str) -> None:
    store = SQLiteStore(Path(path))
    await store.open()
    record = SessionRecord(owner="alice", title="doomed")
    await store.create_session(record)
    print("session", record.id, flush=True)
    for i in range(5):
        message = Message(role=Role.USER if i % 2 == 0 else Role.ASSISTANT, content=f"m{i}")
        await store.append_message(record.id, message)
        print("appended", message.id, flush=True)
    text = ""
    for i in range(1_000_000):  # streams until it is killed
        text += f"chunk{i} "
        await store.upsert_partial(
            record.id, Message(id="reply", role=Role.ASSISTANT, content=text)
        )
        print("partial", text, flush=True)


asyncio.run(main(sys.argv[1]))
"""


async def test_sigkill_mid_stream_keeps_every_acknowledged_message(tmp_path: Path) -> None:
    db_path = tmp_path / "gui-agent.db"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO_ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    child = await asyncio.create_subprocess_exec(
        sys.executable, "-c", CHILD, str(db_path), stdout=asyncio.subprocess.PIPE, env=env
    )
    assert child.stdout is not None
    appended: list[str] = []
    partials: list[str] = []
    try:
        async with asyncio.timeout(20):
            session_id = (await child.stdout.readline()).decode().split()[1]
            while len(partials) < 3:
                kind, _, rest = (await child.stdout.readline()).decode().rstrip("\n").partition(" ")
                assert kind in ("appended", "partial"), f"child said {kind!r} {rest!r}"
                (appended if kind == "appended" else partials).append(rest)
    finally:
        os.kill(child.pid, signal.SIGKILL)
        assert await child.wait() == -signal.SIGKILL

    async with SQLiteStore(db_path) as store:
        record = await store.get_session(session_id, owner="alice")
        messages = await store.load_messages(session_id)

    assert record is not None and record.title == "doomed"
    assert [m.id for m in messages[:5]] == appended
    reply = messages[5]
    assert len(messages) == 6 and reply.id == "reply"
    assert reply.status is MessageStatus.INTERRUPTED
    assert reply.content.startswith(partials[-1])
