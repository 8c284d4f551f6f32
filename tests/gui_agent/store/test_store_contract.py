"""What every SessionStore promises, checked on the SQLite store and the memory store alike."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from gui_agent.exceptions import ConfigError, InvalidRequest, StoreError
from gui_agent.store import SessionStore, apply_retention
from schema import (
    AgentName,
    AutoChatSettings,
    InterpreterState,
    Message,
    MessageStatus,
    PermissionMode,
    Role,
    SessionRecord,
    SessionSettings,
    Usage,
)


async def new_session(store: SessionStore, owner: str = "alice", **fields: object) -> SessionRecord:
    record = SessionRecord(owner=owner, **fields)
    await store.create_session(record)
    return record


def test_store_implements_the_protocol(store: SessionStore) -> None:
    assert isinstance(store, SessionStore)


async def test_every_message_type_round_trips(
    store: SessionStore, every_type: list[Message]
) -> None:
    session = await new_session(store)
    for message in every_type:
        await store.append_message(session.id, message)

    loaded = await store.load_messages(session.id)

    assert loaded == every_type
    assert loaded[2].tool_calls[0].parsed_arguments() == {"code": "print(2 + 2)"}
    assert loaded[8].status is MessageStatus.INTERRUPTED
    assert loaded[9].status is MessageStatus.ERROR


async def test_messages_come_back_in_append_order_and_limit_keeps_the_newest(
    store: SessionStore,
) -> None:
    session = await new_session(store)
    sent = [Message(role=Role.USER, content=f"m{i}") for i in range(12)]
    for message in sent:
        await store.append_message(session.id, message)

    assert [m.content for m in await store.load_messages(session.id)] == [m.content for m in sent]
    assert await store.load_messages(session.id, limit=3) == sent[-3:]
    assert await store.load_messages(session.id, limit=0) == []
    assert await store.load_messages(session.id, limit=100) == sent
    # Just over the count too (a slice from len - limit counted from the end: 13 gave 1).
    for limit in (12, 13, 20, 23, 24):
        assert await store.load_messages(session.id, limit=limit) == sent, limit
    assert await store.count_messages(session.id) == 12
    with pytest.raises(InvalidRequest):
        await store.load_messages(session.id, limit=-1)


async def test_conversations_of_two_sessions_stay_apart(store: SessionStore) -> None:
    first, second = await new_session(store), await new_session(store)
    await store.append_message(first.id, Message(role=Role.USER, content="one"))
    await store.append_message(second.id, Message(role=Role.USER, content="two"))

    assert [m.content for m in await store.load_messages(first.id)] == ["one"]
    assert [m.content for m in await store.load_messages(second.id)] == ["two"]


async def test_streaming_partial_is_kept_interrupted_until_completed_in_place(
    store: SessionStore,
) -> None:
    session = await new_session(store)
    question = Message(role=Role.USER, content="Tell me a story")
    await store.append_message(session.id, question)
    reply_id = "reply-1"

    await store.upsert_partial(session.id, Message(id=reply_id, role=Role.ASSISTANT, content="On"))
    await store.upsert_partial(
        session.id, Message(id=reply_id, role=Role.ASSISTANT, content="Once upon")
    )
    partial = (await store.load_messages(session.id))[-1]
    assert (partial.content, partial.status) == ("Once upon", MessageStatus.INTERRUPTED)
    assert await store.count_messages(session.id) == 2

    # A tool result lands before the reply completes: the reply keeps its place.
    tool = Message(role=Role.TOOL, content="42", tool_call_id="c1")
    await store.append_message(session.id, tool)
    done = Message(id=reply_id, role=Role.ASSISTANT, content="Once upon a time.")
    await store.append_message(session.id, done)

    assert await store.load_messages(session.id) == [question, done, tool]

    # A late partial for a reply that already completed changes nothing.
    await store.upsert_partial(session.id, Message(id=reply_id, role=Role.ASSISTANT, content="x"))
    assert (await store.load_messages(session.id))[1] == done


async def test_writing_to_a_missing_session_is_an_error(store: SessionStore) -> None:
    message = Message(role=Role.USER, content="hi")
    with pytest.raises(StoreError, match="no session"):
        await store.append_message("nope", message)
    with pytest.raises(StoreError, match="no session"):
        await store.upsert_partial("nope", message)
    with pytest.raises(StoreError, match="no session"):
        await store.replace_messages("nope", [message])


async def test_replace_messages_rewrites_the_history(store: SessionStore) -> None:
    session = await new_session(store)
    for i in range(4):
        await store.append_message(session.id, Message(role=Role.USER, content=f"old {i}"))
    edited = [Message(role=Role.USER, content="old 0"), Message(role=Role.USER, content="new")]

    await store.replace_messages(session.id, edited)
    assert await store.load_messages(session.id) == edited

    after = Message(role=Role.ASSISTANT, content="answer")
    await store.append_message(session.id, after)
    assert await store.load_messages(session.id) == [*edited, after]

    await store.replace_messages(session.id, [])
    assert await store.count_messages(session.id) == 0


async def test_a_session_record_round_trips_every_field(store: SessionStore) -> None:
    record = SessionRecord(
        owner="alice",
        title="Plan a trip",
        agent=AgentName.LLM_PLANNER,
        settings=SessionSettings(
            model="gpt-test",
            temperature=0.3,
            max_tokens=500,
            permissions={"run_code": PermissionMode.ASK, "read_file": PermissionMode.ALLOW},
        ),
        autochat=AutoChatSettings(enabled=True, max_turns=7, token_budget=10_000),
        state=InterpreterState.STOP,
        usage=Usage(input_tokens=10, output_tokens=20, requests=2, estimated=True),
        goal="Find a cheap flight",
        created_at=datetime(2024, 5, 1, 8, 30, 15, 123456, tzinfo=UTC),
        updated_at=datetime(2024, 5, 2, 9, 0, tzinfo=UTC),
    )
    await store.create_session(record)
    assert await store.get_session(record.id, owner="alice") == record

    changed = record.model_copy(
        update={"title": "Trip", "state": InterpreterState.RUNNING, "goal": None}
    )
    await store.update_session(changed)
    assert await store.get_session(record.id, owner="alice") == changed

    # created_at never changes, whatever an update carries.
    await store.update_session(changed.model_copy(update={"created_at": datetime.now(UTC)}))
    assert await store.get_session(record.id, owner="alice") == changed


async def test_duplicate_or_missing_sessions_are_errors(store: SessionStore) -> None:
    record = await new_session(store)
    with pytest.raises(StoreError, match="already exists"):
        await store.create_session(record)
    with pytest.raises(StoreError, match="no session"):
        await store.update_session(SessionRecord(owner="alice"))
    with pytest.raises(StoreError, match="no session"):
        await store.update_session(record.model_copy(update={"owner": "mallory"}))


async def test_another_owner_cannot_see_rename_or_delete_a_session(store: SessionStore) -> None:
    mine = await new_session(store, title="secret plans")
    await store.append_message(mine.id, Message(role=Role.USER, content="hi"))

    assert await store.get_session(mine.id, owner="bob") is None
    assert await store.list_sessions("bob") == []
    assert await store.list_sessions("bob", query="secret") == []
    assert await store.rename_session(mine.id, "pwned", owner="bob") is False
    assert await store.delete_session(mine.id, owner="bob") is False

    kept = await store.get_session(mine.id, owner="alice")
    assert kept is not None and kept.title == "secret plans"
    assert await store.count_messages(mine.id) == 1


async def test_list_is_newest_updated_first_and_search_ignores_case(
    store: SessionStore, clock: Any
) -> None:
    old = await new_session(store, title="Über die Brücke", updated_at=clock.advance(minutes=1))
    mid = await new_session(store, title="Shopping list", updated_at=clock.advance(minutes=1))
    new = await new_session(store, title="überall Ideas", updated_at=clock.advance(minutes=1))
    await new_session(store, owner="bob", title="über bob")

    assert [r.id for r in await store.list_sessions("alice")] == [new.id, mid.id, old.id]
    assert [r.id for r in await store.list_sessions("alice", query="ÜBER")] == [new.id, old.id]
    assert [r.id for r in await store.list_sessions("alice", query="list")] == [mid.id]
    assert await store.list_sessions("alice", query="nothing like it") == []
    assert [r.id for r in await store.list_sessions("alice", limit=2)] == [new.id, mid.id]
    assert [r.id for r in await store.list_sessions("alice", limit=2, offset=2)] == [old.id]

    # Writing to a session moves it to the top.
    clock.advance(minutes=1)
    await store.append_message(old.id, Message(role=Role.USER, content="back again"))
    top, *_ = await store.list_sessions("alice")
    assert top.id == old.id


async def test_rename_and_delete(store: SessionStore, clock: Any) -> None:
    session = await new_session(store, title="draft", updated_at=clock.now)
    await store.append_message(session.id, Message(role=Role.USER, content="hi"))
    clock.advance(hours=1)

    assert await store.rename_session(session.id, "final", owner="alice") is True
    renamed = await store.get_session(session.id, owner="alice")
    assert renamed is not None and renamed.title == "final"
    assert renamed.updated_at == clock.now

    assert await store.delete_session(session.id, owner="alice") is True
    assert await store.get_session(session.id, owner="alice") is None
    assert await store.count_messages(session.id) == 0
    assert await store.delete_session(session.id, owner="alice") is False
    assert await store.rename_session(session.id, "again", owner="alice") is False


async def test_mark_interrupted_runs_stops_live_sessions(store: SessionStore) -> None:
    running = await new_session(store, state=InterpreterState.RUNNING)
    waiting = await new_session(store, owner="bob", state=InterpreterState.WAITING)
    idle = await new_session(store, state=InterpreterState.STOP)
    fresh = await new_session(store, state=InterpreterState.INIT)

    assert sorted(await store.mark_interrupted_runs()) == sorted([running.id, waiting.id])

    states = {
        record.id: record.state
        for owner in ("alice", "bob")
        for record in await store.list_sessions(owner)
    }
    assert states == {
        running.id: InterpreterState.STOP,
        waiting.id: InterpreterState.STOP,
        idle.id: InterpreterState.STOP,
        fresh.id: InterpreterState.INIT,
    }
    assert await store.mark_interrupted_runs() == []


async def test_retention_deletes_only_sessions_untouched_for_longer(
    store: SessionStore, clock: Any
) -> None:
    now = clock.now
    clock.now = now - timedelta(days=90)
    ancient = await new_session(store, updated_at=clock.now)
    await store.append_message(ancient.id, Message(role=Role.USER, content="long ago"))
    clock.now = now
    stale = await new_session(store, owner="bob", updated_at=now - timedelta(days=31))
    recent = await new_session(store, updated_at=now - timedelta(days=29))
    revived = await new_session(store, updated_at=now - timedelta(days=60))
    await store.append_message(revived.id, Message(role=Role.USER, content="still here"))

    assert await apply_retention(store, days=None, now=now) == []
    deleted = await apply_retention(store, days=30, now=now)
    assert sorted(deleted) == sorted([(ancient.id, "alice"), (stale.id, "bob")])

    assert await store.get_session(ancient.id, owner="alice") is None
    assert await store.get_session(stale.id, owner="bob") is None
    assert await store.count_messages(ancient.id) == 0
    assert await store.get_session(recent.id, owner="alice") is not None
    assert await store.get_session(revived.id, owner="alice") is not None
    with pytest.raises(ConfigError):
        await apply_retention(store, days=0)


async def test_a_queued_message_stays_queued_until_the_history_holds_it(
    store: SessionStore,
) -> None:
    first, second = await new_session(store), await new_session(store, owner="bob")
    waiting = [Message(role=Role.USER, content=f"meanwhile {i}") for i in range(3)]
    for message in waiting:
        await store.queue_message(first.id, message)
    other = Message(role=Role.USER, content="bob's")
    await store.queue_message(second.id, other)
    assert await store.load_queued() == {first.id: waiting, second.id: [other]}

    await store.append_message(first.id, waiting[1])  # the agent took up the second
    assert await store.load_queued() == {first.id: [waiting[0], waiting[2]], second.id: [other]}
    await store.queue_message(first.id, waiting[1])  # (a late write: already in the history)
    assert (await store.load_queued())[first.id] == [waiting[0], waiting[2]]

    await store.replace_messages(first.id, [waiting[1], waiting[0]])  # an edit took one up
    assert (await store.load_queued())[first.id] == [waiting[2]]
    assert await store.count_messages(first.id) == 2

    assert await store.delete_session(second.id, owner="bob")
    assert await store.load_queued() == {first.id: [waiting[2]]}
    with pytest.raises(StoreError, match="no session"):
        await store.queue_message(second.id, other)


async def test_retention_deletes_what_a_session_had_queued(store: SessionStore, clock: Any) -> None:
    old = await new_session(store, updated_at=clock.now - timedelta(days=40))
    await store.queue_message(old.id, Message(role=Role.USER, content="never read"))
    assert await apply_retention(store, days=30, now=clock.now) == [(old.id, "alice")]
    assert await store.load_queued() == {}


def test_public_surface_is_exact() -> None:
    import gui_agent.store

    assert set(gui_agent.store.__all__) == {
        "DB_FILE_NAME",
        "SCHEMA_VERSION",
        "MemoryStore",
        "SQLiteStore",
        "SessionStore",
        "apply_retention",
        "default_data_dir",
    }
    assert all(hasattr(gui_agent.store, name) for name in gui_agent.store.__all__)
