"""SessionManager: every lookup scoped to its owner; sessions restored from the store."""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest

from connectors.scripted import ScriptedModel
from gui_agent import InvalidRequest, SessionManager, SessionNotFound, StaticCatalog
from gui_agent.manager import INTERRUPTED_NOTE, imported_title
from gui_agent.store import SQLiteStore
from schema import (
    AgentName,
    InterpreterState,
    Message,
    MessageType,
    Role,
    SessionRecord,
    SessionSettings,
    new_id,
)
from schema.requests import MAX_TITLE_CHARS


def manager(tmp_path: Path, *replies: str) -> SessionManager:
    return SessionManager(
        models=StaticCatalog(ScriptedModel(replies, name="scripted")),
        store=SQLiteStore(tmp_path / "sessions.db"),
        workspace_root=tmp_path / "work",
    )


async def test_sessions_are_scoped_to_their_owner(tmp_path: Path) -> None:
    m = manager(tmp_path, "hi alice")
    await m.start()
    mine = await m.create("alice")
    _ = [e async for e in mine.chat("hello")]
    assert [r.title for r in await m.list("alice")] == ["hello"]
    assert await m.list("bob") == []
    with pytest.raises(SessionNotFound):
        await m.get(mine.id, "bob")
    with pytest.raises(SessionNotFound):
        await m.delete(mine.id, "bob")
    assert mine.session.workdir is not None
    assert mine.session.workdir.is_relative_to(tmp_path / "work" / "alice")
    await m.close()


async def test_a_restart_restores_history_settings_and_role(tmp_path: Path) -> None:
    first = manager(tmp_path, "the answer")
    await first.start()
    interpreter = await first.create("alice", agent=AgentName.THOUGHT)
    _ = [e async for e in interpreter.chat("question")]
    await interpreter.update(title="Renamed")
    session_id = interpreter.id
    await first.close()

    second = manager(tmp_path)
    await second.start()
    restored = await second.get(session_id, "alice")
    assert restored.state is InterpreterState.STOP
    assert restored.session.title == "Renamed"
    assert restored.session.agent is AgentName.THOUGHT
    assert [m.content for m in restored.session.history] == ["question", "the answer"]
    assert restored.window().message_ids == tuple(m.id for m in restored.session.history)
    await second.close()


async def test_a_turn_cut_by_a_crash_comes_back_stopped_with_a_note(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "sessions.db")
    await store.open()
    record = SessionRecord(owner="alice", state=InterpreterState.RUNNING, title="cut")
    await store.create_session(record)
    await store.append_message(record.id, Message(role=Role.USER, content="go"))
    await store.upsert_partial(record.id, Message(role=Role.ASSISTANT, content="half an"))
    await store.close()

    m = manager(tmp_path, "recovered")
    await m.start()
    assert m.interrupted_at_start == (record.id,)
    interpreter = await m.get(record.id, "alice")
    assert interpreter.state is InterpreterState.STOP
    history = interpreter.session.history
    assert history[1].content == "half an" and history[1].status.value == "interrupted"
    assert history[-1].content == INTERRUPTED_NOTE and history[-1].type is MessageType.MESSAGE
    _ = [e async for e in interpreter.chat("again")]
    assert interpreter.session.history[-1].content == "recovered"
    sent = interpreter.deps.provider.requests[-1].messages  # type: ignore[attr-defined]
    assert INTERRUPTED_NOTE not in [msg.content for msg in sent]  # shown, never sent
    await m.close()


async def test_import_opens_a_new_session_and_replaces_an_unknown_model(tmp_path: Path) -> None:
    m = manager(tmp_path)
    await m.start()
    record = SessionRecord(
        owner="bob", title="imported", settings=SessionSettings(model="openai:elsewhere")
    )
    messages = [Message(role=Role.USER, content="q"), Message(role=Role.ASSISTANT, content="a")]
    interpreter = await m.import_session(record, messages)
    assert interpreter.session.settings.model == "scripted"
    assert [x.content for x in interpreter.session.history] == ["q", "a"]
    assert [r.title for r in await m.list("bob")] == ["imported"]
    await m.close()


async def test_a_deleted_session_starts_nothing_more(tmp_path: Path) -> None:
    m = manager(tmp_path, "first answer")
    await m.start()
    held = await m.create("alice")  # a request holding the session while it is deleted
    await held.update(autochat=held.session.autochat.model_copy(update={"enabled": True}))
    await m.delete(held.id, "alice")
    assert held.closed and not held.busy
    with pytest.raises(SessionNotFound):
        await held.send("too late")
    with pytest.raises(SessionNotFound):
        await m.get(held.id, "alice")
    assert not held.busy and await m.list("alice") == []
    await m.close()


async def test_of_two_deletes_at_once_the_second_finds_the_session_gone(tmp_path: Path) -> None:
    import asyncio

    m = manager(tmp_path)
    await m.start()
    held = await m.create("alice")
    await m.release(held.id)  # unloaded: each delete first loads it, so both find it
    try:
        outcomes = await asyncio.gather(
            m.delete(held.id, "alice"), m.delete(held.id, "alice"), return_exceptions=True
        )
    finally:
        await m.close()
    assert outcomes.count(None) == 1
    assert [type(o) for o in outcomes if o is not None] == [SessionNotFound]


async def test_a_delete_racing_sends_leaves_no_run_behind(tmp_path: Path) -> None:
    import asyncio

    m = manager(tmp_path, *["reply"] * 50)
    await m.start()
    held = await m.create("alice")

    async def send(text: str) -> None:
        with contextlib.suppress(SessionNotFound):
            await held.send(text)

    await asyncio.gather(m.delete(held.id, "alice"), *(send(f"m{i}") for i in range(10)))
    await asyncio.sleep(0.05)
    assert held.closed and not held.busy and held.state is not InterpreterState.RUNNING
    with pytest.raises(SessionNotFound):
        await m.get(held.id, "alice")
    await m.close()


async def test_a_second_retry_while_the_first_runs_is_refused(tmp_path: Path) -> None:
    import asyncio

    m = manager(tmp_path, "a1", "a2", "again")
    await m.start()
    interpreter = await m.create("alice")
    for text in ("u1", "u2"):
        _ = [e async for e in interpreter.chat(text)]
    results = await asyncio.gather(interpreter.retry(), interpreter.retry(), return_exceptions=True)
    refused = [r for r in results if isinstance(r, InvalidRequest)]
    assert len(refused) == 1 and "in progress" in str(refused[0])
    await interpreter.wait_idle()
    assert [m.content for m in interpreter.session.history] == ["u1", "a1", "u2", "again"]
    with pytest.raises(InvalidRequest, match="no message of yours to edit"):
        await (await m.create("alice")).edit_last("x")
    await m.close()


async def test_idle_sessions_beyond_the_limit_are_unloaded_and_come_back_whole(
    tmp_path: Path,
) -> None:
    m = manager(tmp_path, *[f"answer {i}" for i in range(4)])
    m.max_live = 2
    await m.start()
    sessions = []
    for i in range(3):
        interpreter = await m.create("alice")
        _ = [e async for e in interpreter.chat(f"question {i}")]
        sessions.append(interpreter)
    watched = sessions[2].subscribe()  # someone is looking at this one: it stays
    fourth = await m.create("alice")
    assert m.live_count == 2
    assert sessions[0].closed and sessions[1].closed and not sessions[2].closed
    assert not fourth.closed
    back = await m.get(sessions[0].id, "alice")
    assert back is not sessions[0] and not back.closed
    assert [x.content for x in back.session.history] == ["question 0", "answer 0"]
    _ = [e async for e in back.chat("more")]  # usable as before
    assert back.session.history[-1].content == "answer 3"
    watched.close()
    await m.close()


async def test_an_imported_chat_can_be_told_from_the_chat_it_copies(tmp_path: Path) -> None:
    """The copy had the original's title, so the list showed two chats alike."""
    m = manager(tmp_path)
    await m.start()
    record = SessionRecord(owner="bob", title="Trip plans")
    messages = [Message(role=Role.USER, content="q"), Message(role=Role.ASSISTANT, content="a")]
    first = await m.import_session(record, messages)  # no chat of bob's has the title yet
    again = await m.import_session(record.model_copy(update={"id": new_id()}), messages)
    third = await m.import_session(record.model_copy(update={"id": new_id()}), messages)
    other = await m.import_session(record.model_copy(update={"id": new_id(), "owner": "eve"}), [])
    titles = [i.session.title for i in (first, again, third, other)]
    assert titles == [
        "Trip plans",
        "Trip plans (imported)",
        "Trip plans (imported 2)",
        "Trip plans",
    ]
    assert sorted(r.title for r in await m.list("bob")) == sorted(titles[:3])
    assert imported_title("Trip plans (imported)", set(titles)) == "Trip plans (imported 3)"
    long = imported_title("x" * MAX_TITLE_CHARS, {"x" * MAX_TITLE_CHARS})
    assert len(long) == MAX_TITLE_CHARS and long.endswith("x (imported)")
    await m.close()
