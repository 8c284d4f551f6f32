"""CREW: members work in turn on one conversation; the default is a doer and a reviewer."""

from __future__ import annotations

from pathlib import Path

import pytest

from connectors.scripted import ScriptedModel, call
from gui_agent.agents import CrewAgent, CrewMember
from gui_agent.agents.crew import CREW_SPEAKER
from gui_agent.quick import create_interpreter
from gui_agent.store import MemoryStore
from schema import (
    AgentName,
    AutoChatSettings,
    AutoChatStopped,
    AutoChatStopReason,
    Event,
    MessageCompleted,
    MessageStarted,
    MessageStatus,
    Role,
    RunFinished,
    RunOutcome,
    TextDelta,
    UsageReported,
)
from tests.gui_agent.helpers import make


async def test_the_doer_works_with_tools_then_the_reviewer_answers(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    interpreter, model = make(
        tmp_path,
        [call("list_files"), "There is notes.txt.", "Checked: the folder holds notes.txt."],
    )
    assert isinstance(model, ScriptedModel)
    await interpreter.set_agent(AgentName.CREW)
    events = [e async for e in interpreter.chat("what is in the folder?")]

    history = interpreter.session.history
    assert [(m.role, m.agent) for m in history] == [
        (Role.USER, None),
        (Role.ASSISTANT, AgentName.AGENT_EXECUTOR),
        (Role.TOOL, AgentName.AGENT_EXECUTOR),
        (Role.ASSISTANT, AgentName.AGENT_EXECUTOR),
        (Role.USER, None),  # over to the reviewer
        (Role.ASSISTANT, AgentName.THOUGHT),
    ]
    handoff = history[4]
    assert handoff.metadata["crew_member"] == "reviewer"
    assert "what is in the folder?" in handoff.content
    assert history[-1].content == "Checked: the folder holds notes.txt."

    review = model.requests[-1]
    assert review.tools == ()  # the reviewer only reads and writes
    assert review.messages[-1].id == handoff.id  # it answers a user turn, never continues
    assert all(r.tools for r in model.requests[:-1])
    assert [e.outcome for e in events if isinstance(e, RunFinished)] == [RunOutcome.COMPLETED]
    usage = [e for e in events if isinstance(e, UsageReported)]
    assert usage[-1].turn.requests == 3

    model.push(call("list_files"), "Still notes.txt.", "Checked again.")
    await interpreter.retry()  # the person's message is retried, not the hand-over
    await interpreter.wait_idle()
    again = interpreter.session.history
    assert again[0].content == "what is in the folder?" and len(again) == 6
    assert again[-1].content == "Checked again."


async def test_each_reply_is_marked_as_its_members_in_the_events_history_and_store(
    tmp_path: Path,
) -> None:
    """A member's replies carry the role its calls are made as (the reviewer's: THOUGHT), so
    a front end read them as that role's: each says which member wrote it (`CREW_SPEAKER`),
    as it is announced, kept and saved, and the role code stays."""
    store = MemoryStore()
    model = ScriptedModel([call("list_files"), "Listed.", "Checked."])
    interpreter = create_interpreter(model, workdir=tmp_path, store=store)
    await store.create_session(interpreter.session.to_record(interpreter.state))
    await interpreter.set_agent(AgentName.CREW)
    events = [e async for e in interpreter.chat("what is here?")]
    completed = [
        e.message
        for e in events
        if isinstance(e, MessageCompleted) and e.message.role is Role.ASSISTANT
    ]
    saved = [m for m in await store.load_messages(interpreter.id) if m.role is Role.ASSISTANT]
    kept = [m for m in interpreter.session.history if m.role is Role.ASSISTANT]
    for replies in (completed, kept, saved):
        assert [(m.agent, m.metadata.get(CREW_SPEAKER)) for m in replies] == [
            (AgentName.AGENT_EXECUTOR, "doer"),
            (AgentName.AGENT_EXECUTOR, "doer"),
            (AgentName.THOUGHT, "reviewer"),
        ]
    assert [m.id for m in kept] == [m.id for m in completed]
    await interpreter.set_agent(AgentName.THOUGHT)  # the role alone: no member's
    _ = [e async for e in interpreter.chat("think")]
    assert CREW_SPEAKER not in interpreter.session.history[-1].metadata
    await store.close()


async def test_a_reply_a_stop_cut_short_is_marked_as_its_members(tmp_path: Path) -> None:
    """The crew's first reply, stopped mid-stream, is filed by the interpreter: it keeps the
    member's name as a completed one does (without it, a chat whose only crew reply is that
    one read as the Executor's after a reload), in the history, the store and the snapshot
    a page opening the chat mid-reply is given; its `message_started` said it too."""
    store = MemoryStore()
    model = ScriptedModel(["one two three four five six seven eight nine ten"], delay_s=0.05)
    interpreter = create_interpreter(model, workdir=tmp_path, store=store)
    await store.create_session(interpreter.session.to_record(interpreter.state))
    await interpreter.set_agent(AgentName.CREW)
    async with interpreter.subscribe() as sub:
        await interpreter.send("count")
        said: list[Event] = []
        async for event in sub:
            said.append(event)
            if isinstance(event, TextDelta):
                break
        (snapshot,) = interpreter.streaming
        assert snapshot.metadata[CREW_SPEAKER] == "doer"
        assert await interpreter.stop() is True
    assert [e.speaker for e in said if isinstance(e, MessageStarted)] == ["doer"]
    cut = interpreter.session.history[-1]
    assert cut.role is Role.ASSISTANT and cut.status is MessageStatus.INTERRUPTED
    assert cut.content.startswith("one") and cut.agent is AgentName.AGENT_EXECUTOR
    assert cut.metadata[CREW_SPEAKER] == "doer"
    (saved,) = [m for m in await store.load_messages(interpreter.id) if m.id == cut.id]
    assert saved.metadata[CREW_SPEAKER] == "doer"
    await store.close()


async def test_each_members_reply_says_its_member_as_it_starts(tmp_path: Path) -> None:
    interpreter, _ = make(tmp_path, [call("list_files"), "Listed.", "Checked."])
    await interpreter.set_agent(AgentName.CREW)
    events = [e async for e in interpreter.chat("what is here?")]
    assert [(e.agent, e.speaker) for e in events if isinstance(e, MessageStarted)] == [
        (AgentName.AGENT_EXECUTOR, "doer"),
        (AgentName.AGENT_EXECUTOR, "doer"),
        (AgentName.THOUGHT, "reviewer"),
    ]
    await interpreter.set_agent(AgentName.THOUGHT)  # the role alone: no member's
    events = [e async for e in interpreter.chat("think")]
    assert [e.speaker for e in events if isinstance(e, MessageStarted)] == [None]


async def test_a_member_that_hits_a_limit_ends_the_crews_turn(tmp_path: Path) -> None:
    interpreter, model = make(tmp_path, [call("list_files"), "unused review"])
    session = interpreter.session
    session.settings = session.settings.model_copy(update={"max_iterations": 1})
    await interpreter.set_agent(AgentName.CREW)
    events = [e async for e in interpreter.chat("go")]
    assert [e.outcome for e in events if isinstance(e, RunFinished)] == [RunOutcome.MAX_ITERATIONS]
    assert not any(m.metadata.get("crew_member") for m in session.history)
    assert isinstance(model, ScriptedModel) and model.remaining == 1


async def test_a_custom_crew_runs_its_members_in_order(tmp_path: Path) -> None:
    crew = CrewAgent(
        members=[
            CrewMember("drafter", AgentName.THOUGHT, "Draft: {request}", tools=False),
            CrewMember("editor", AgentName.THOUGHT, "Edit the draft for: {request}", tools=False),
        ]
    )
    model = ScriptedModel(["a draft", "an edited draft"])
    interpreter = create_interpreter(model, workdir=tmp_path, architectures={AgentName.CREW: crew})
    _ = [e async for e in interpreter.chat("a poem")]
    contents = [m.content for m in interpreter.session.history]
    assert contents == ["a poem", "a draft", "Edit the draft for: a poem", "an edited draft"]
    assert crew.description == "A small team working in turn: drafter then editor."
    with pytest.raises(ValueError, match="member"):
        CrewAgent(members=[])


async def test_a_brief_may_show_json_braces(tmp_path: Path) -> None:
    brief = 'Answer {request} as JSON, like {"answer": "...", "sure": true}.'
    crew = CrewAgent(
        members=[
            CrewMember("doer", AgentName.THOUGHT, "Do: {request}", tools=False),
            CrewMember("formatter", AgentName.THOUGHT, brief, tools=False),
        ]
    )
    model = ScriptedModel(["42", '{"answer": "42", "sure": true}'])
    interpreter = create_interpreter(model, workdir=tmp_path, architectures={AgentName.CREW: crew})
    events = [e async for e in interpreter.chat("the answer")]
    assert [e.outcome for e in events if isinstance(e, RunFinished)] == [RunOutcome.COMPLETED]
    handoff = interpreter.session.history[2]
    assert handoff.content == 'Answer the answer as JSON, like {"answer": "...", "sure": true}.'


async def test_in_an_autochat_turn_the_reviewer_checks_the_work_against_the_goal(
    tmp_path: Path,
) -> None:
    interpreter, model = make(
        tmp_path,
        ["hello written", "looks right", "hello improved", "still right"],
        autochat=AutoChatSettings(enabled=True, max_turns=1),
    )
    assert isinstance(model, ScriptedModel)
    await interpreter.set_agent(AgentName.CREW)
    _ = [e async for e in interpreter.chat("write hello.txt")]
    briefs = [m.content for m in interpreter.session.history if m.metadata.get("crew_member")]
    assert len(briefs) == 2
    assert "The request was: write hello.txt\n" in briefs[1]
    # The continuation prompt asks for task_complete; the reviewer has no tools to call it.
    assert "task_complete" not in briefs[1]
    assert model.requests[-1].tools == ()


async def test_a_doer_that_declares_the_task_complete_still_has_its_work_reviewed(
    tmp_path: Path,
) -> None:
    interpreter, model = make(
        tmp_path,
        [call("task_complete", summary="wrote hello.txt"), "Checked: hello.txt is missing."],
        autochat=AutoChatSettings(enabled=True, max_turns=5),
    )
    assert isinstance(model, ScriptedModel)
    await interpreter.set_agent(AgentName.CREW)
    events = [e async for e in interpreter.chat("write hello.txt")]
    history = interpreter.session.history
    assert [m.metadata.get("crew_member") for m in history if m.role is Role.USER] == [
        None,
        "reviewer",
    ]
    assert history[-1].agent is AgentName.THOUGHT
    assert history[-1].content == "Checked: hello.txt is missing."
    assert len(model.requests) == 2 and model.requests[-1].tools == ()
    [stop] = [e for e in events if isinstance(e, AutoChatStopped)]
    assert stop.reason is AutoChatStopReason.TASK_COMPLETE  # one turn: the task was declared done
