"""The interpreter: turns, Stop, queued messages, approvals, errors, concurrency."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from connectors.scripted import ScriptedModel, call, calls
from gui_agent.exceptions import InvalidRequest, ModelRateLimited
from gui_agent.quick import create_interpreter
from gui_agent.store import MemoryStore
from gui_agent.tools import Tool, tool
from schema import (
    MAX_MESSAGE_CHARS,
    ApprovalDecision,
    ApprovalRequested,
    ImagePart,
    InterpreterState,
    Message,
    MessageCompleted,
    MessageStatus,
    MessageType,
    PermissionMode,
    Role,
    RunFinished,
    RunOutcome,
    StateChanged,
    TextDelta,
)
from tests.gui_agent.helpers import answered, make, next_event, of_type


async def test_a_turn_streams_and_frames_itself_with_state_changes(tmp_path: Path) -> None:
    interpreter, _ = make(tmp_path, ["Hello there, how can I help?"])
    assert interpreter.state is InterpreterState.INIT
    events = [e async for e in interpreter.chat("hi")]
    states = [(e.from_state, e.to_state) for e in events if isinstance(e, StateChanged)]
    assert states == [
        (InterpreterState.INIT, InterpreterState.RUNNING),
        (InterpreterState.RUNNING, InterpreterState.STOP),
    ]
    deltas = [e.delta for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 3 and "".join(deltas) == "Hello there, how can I help?"
    assert [e.seq for e in events] == sorted({e.seq for e in events})
    assert {e.session_id for e in events} == {interpreter.id}
    assert interpreter.session.history[-1].content == "Hello there, how can I help?"
    assert interpreter.session.title == "hi"


async def test_empty_and_oversized_messages_are_refused_without_a_state_change(
    tmp_path: Path,
) -> None:
    interpreter, model = make(tmp_path, ["unused"])
    with pytest.raises(InvalidRequest, match="empty"):
        await interpreter.send("   \n ")
    with pytest.raises(InvalidRequest, match="limit"):
        await interpreter.send("x" * (MAX_MESSAGE_CHARS + 1))
    assert interpreter.state is InterpreterState.INIT and not interpreter.session.history
    assert isinstance(model, ScriptedModel) and model.requests == []


async def test_a_large_message_within_the_limit_is_kept_whole(tmp_path: Path) -> None:
    interpreter, model = make(tmp_path, ["got it"])
    text = "y" * MAX_MESSAGE_CHARS
    _ = [e async for e in interpreter.chat(text)]
    assert interpreter.session.history[0].content == text
    assert isinstance(model, ScriptedModel)
    assert model.requests[0].messages[-1].content == text


async def test_stop_mid_stream_keeps_the_partial_reply_marked_interrupted(
    tmp_path: Path,
) -> None:
    long_reply = " ".join(f"word{i}" for i in range(2000))
    interpreter, _ = make(tmp_path, [long_reply, "second answer"], delay_s=0.005)
    async with interpreter.subscribe() as sub:
        await interpreter.send("write a lot")
        await next_event(sub, lambda e: isinstance(e, TextDelta))
        await next_event(sub, lambda e: isinstance(e, TextDelta))
        assert await interpreter.stop() is True
        after = sub.pending()
    assert interpreter.state is InterpreterState.STOP
    partial = interpreter.session.history[-1]
    assert partial.role is Role.ASSISTANT and partial.status is MessageStatus.INTERRUPTED
    assert partial.content.startswith("word0") and len(partial.content) < len(long_reply)
    finished = [e for e in after if isinstance(e, RunFinished)]
    assert finished and finished[0].outcome is RunOutcome.INTERRUPTED
    assert not [e for e in after if isinstance(e, TextDelta) and e.seq > finished[0].seq]
    # the session stays usable, and the model sees the partial reply
    events = [e async for e in interpreter.chat("go on")]
    assert of_type(events, "run_finished")[0].outcome is RunOutcome.COMPLETED
    assert interpreter.session.history[-1].content == "second answer"


async def test_stop_mid_tool_cancels_the_tool_and_answers_its_call(tmp_path: Path) -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    @tool
    async def slow() -> str:
        """Wait for a long time."""
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.set()
        return "never"

    interpreter, _ = make(tmp_path, [call("slow"), "after"], tools=[slow])
    await interpreter.send("run slow")
    await started.wait()
    assert interpreter.state is InterpreterState.RUNNING
    await interpreter.stop()
    assert cancelled.is_set()
    assert interpreter.state is InterpreterState.STOP
    answer = interpreter.session.history[-1]
    assert answer.role is Role.TOOL and answer.status is MessageStatus.INTERRUPTED
    assert answer.content.startswith("Interrupted while running")


async def test_stop_when_idle_is_harmless(tmp_path: Path) -> None:
    interpreter, _ = make(tmp_path, ["x"])
    assert await interpreter.stop() is False
    assert await interpreter.stop() is False
    assert interpreter.state is InterpreterState.INIT


async def test_a_message_sent_while_running_is_queued_and_handled_next(tmp_path: Path) -> None:
    gate = asyncio.Event()
    entered = asyncio.Event()

    @tool
    async def wait_gate() -> str:
        """Block until the test opens the gate."""
        entered.set()
        await gate.wait()
        return "opened"

    interpreter, model = make(
        tmp_path, [call("wait_gate"), "first done", "second done"], tools=[wait_gate]
    )
    async with interpreter.subscribe() as sub:
        await interpreter.send("first")
        await entered.wait()
        await interpreter.send("second")  # queued, not run concurrently
        assert interpreter.state is InterpreterState.RUNNING
        gate.set()
        events = [e async for e in sub.until_idle()]
    contents = [m.content for m in interpreter.session.history if m.role is Role.USER]
    assert contents == ["first", "second"]
    assert isinstance(model, ScriptedModel)
    # the queued message reached the model in the same turn, before its next call
    assert [m.content for m in model.requests[1].messages if m.role is Role.USER] == [
        "first",
        "second",
    ]
    assert len(of_type(events, "run_finished")) == 1


def hanging_tool() -> tuple[Tool, asyncio.Event]:
    """A tool that never ends by itself, and the event set once it runs."""
    entered = asyncio.Event()

    @tool
    async def hang() -> str:
        """Hang."""
        entered.set()
        await asyncio.Event().wait()
        return ""

    return hang, entered


async def test_messages_queued_behind_a_stopped_turn_are_kept(tmp_path: Path) -> None:
    hang, entered = hanging_tool()
    interpreter, _ = make(tmp_path, [call("hang")], tools=[hang])
    await interpreter.send("first")
    await entered.wait()
    queued = await interpreter.send("queued one")
    await interpreter.stop()
    kept = interpreter.session.history[-1]
    assert kept.content == "queued one" and kept.id == queued.id
    assert kept.metadata == {"unanswered": True}  # front ends say so beside it
    assert interpreter.session.history[0].metadata == {}  # the message the turn answered


async def test_messages_sent_as_a_stop_ends_its_turn_are_answered_not_filed_unanswered(
    tmp_path: Path,
) -> None:
    """A reader of the stopped turn sees its end and sends at once, before the Stop itself
    has returned: those messages start the next turn. The Stop used to file them as left
    unanswered (once more than said, the second queued one never answered)."""
    hang, entered = hanging_tool()
    interpreter, model = make(tmp_path, [call("hang"), "Both read."], tools=[hang])

    async def stop_when_the_tool_runs() -> bool:
        await entered.wait()
        return await interpreter.stop()

    stopping = asyncio.ensure_future(stop_when_the_tool_runs())
    async for _ in interpreter.chat("first"):
        pass
    sent = [await interpreter.send("A"), await interpreter.send("B")]
    assert await stopping
    await interpreter.wait_idle()
    mine = [m for m in interpreter.session.history if m.role is Role.USER]
    assert [(m.content, m.metadata) for m in mine] == [("first", {}), ("A", {}), ("B", {})]
    assert [m.id for m in mine[1:]] == [m.id for m in sent]
    assert interpreter.session.history[-1].content == "Both read."
    assert isinstance(model, ScriptedModel)
    asked = [m.content for m in model.requests[-1].messages if m.role is Role.USER]
    assert asked == ["first", "A", "B"]  # each once


async def test_a_turn_stopped_before_it_ran_files_its_message_before_the_idle_mark(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(tmp_path, ["never said"])
    async with interpreter.subscribe() as sub:
        message = await interpreter.send("stopped at once")  # its task has not run yet
        queued = await interpreter.send("queued behind it")
        assert await interpreter.stop()
        events = [e async for e in sub.until_idle()]
    filed = [e.message for e in events if isinstance(e, MessageCompleted)]
    assert [(m.id, m.metadata) for m in filed] == [
        (message.id, {"unanswered": True}),
        (queued.id, {"unanswered": True}),
    ]
    assert interpreter.session.history == filed
    assert interpreter.state is InterpreterState.INIT  # no turn began


async def test_a_stop_as_the_turn_takes_up_its_message_marks_it_unanswered(
    tmp_path: Path,
) -> None:
    """The turn had filed its message and was saving it when the Stop came: the message
    stayed with no reply and no mark, and went to the model with the next one."""
    reached, gate = asyncio.Event(), asyncio.Event()

    class SlowStore(MemoryStore):
        async def append_message(self, session_id: str, message: Message) -> None:
            if message.content == "stopped as it began":
                reached.set()
                await gate.wait()
            await super().append_message(session_id, message)

    store = SlowStore()
    model = ScriptedModel(["never said"], default="Answered.")
    interpreter = create_interpreter(model, workdir=tmp_path, store=store)
    await store.create_session(interpreter.session.to_record(interpreter.state))
    asked = await interpreter.send("stopped as it began")
    await reached.wait()  # the turn has begun and filed it
    stopping = asyncio.ensure_future(interpreter.stop())
    await asyncio.sleep(0)
    gate.set()
    assert await stopping
    [kept] = interpreter.session.history
    assert kept.id == asked.id and kept.metadata == {"unanswered": True}
    saved = await store.load_messages(interpreter.session.id)
    assert [(m.id, m.metadata) for m in saved] == [(asked.id, {"unanswered": True})]
    _ = [e async for e in interpreter.chat("the next one")]
    assert [m.content for m in model.requests[-1].messages if m.role is Role.USER] == [
        "the next one"
    ]  # (the one left unanswered is not sent: the person sends it again if they want it)


async def test_approval_allow_once_runs_the_tool_after_waiting(tmp_path: Path) -> None:
    interpreter, _ = make(tmp_path, [call("run_python", code="print(6 * 7)"), "It is 42."])
    async with interpreter.subscribe() as sub:
        await interpreter.send("compute")
        request = await next_event(sub, lambda e: isinstance(e, ApprovalRequested))
        assert isinstance(request, ApprovalRequested)
        assert interpreter.state is InterpreterState.WAITING
        assert "print(6 * 7)" in request.detail and request.language == "python"
        assert interpreter.approve(request.approval_id, ApprovalDecision.ALLOW_ONCE)
        events = [e async for e in sub.until_idle()]
    states = [e.to_state for e in events if isinstance(e, StateChanged)]
    assert states == [InterpreterState.RUNNING, InterpreterState.STOP]
    console = [m for m in interpreter.session.history if m.type is MessageType.CONSOLE]
    assert console and "42" in console[0].content
    assert "run_python" not in interpreter.session.allowed_tools


async def test_approval_deny_returns_the_denial_and_note_to_the_model(tmp_path: Path) -> None:
    interpreter, model = make(
        tmp_path, [call("write_file", path="a.txt", content="x"), "Understood."]
    )
    await answered(interpreter, "write", ApprovalDecision.DENY, "not that file")
    assert not (tmp_path / "a.txt").exists()
    assert isinstance(model, ScriptedModel)
    tool_message = model.requests[1].messages[-1]
    assert tool_message.role is Role.TOOL and "denied" in tool_message.content
    assert "not that file" in tool_message.content


async def test_a_note_given_with_allow_reaches_the_model_after_the_result(
    tmp_path: Path,
) -> None:
    interpreter, model = make(
        tmp_path,
        [
            call("write_file", path="a.txt", content="x"),
            "Noted.",
            call("write_file", path="b.txt", content="y"),
            "Done.",
        ],
    )
    async with interpreter.subscribe() as sub:
        await interpreter.send("write")
        request = await next_event(sub, lambda e: isinstance(e, ApprovalRequested))
        assert isinstance(request, ApprovalRequested)
        interpreter.approve(request.approval_id, ApprovalDecision.ALLOW_SESSION, " keep it short ")
        _ = [e async for e in sub.until_idle()]
    assert (tmp_path / "a.txt").read_text() == "x"
    assert isinstance(model, ScriptedModel)
    tool_message = model.requests[1].messages[-1]
    assert tool_message.role is Role.TOOL
    assert tool_message.content.endswith("[The user allowed this call with a note: keep it short]")
    assert not interpreter.session.allow_notes
    # the note belongs to that call only: the next call (allowed for the session) has none
    _ = [e async for e in interpreter.chat("again")]
    later = model.requests[3].messages[-1]
    assert later.role is Role.TOOL and "note" not in later.content


async def test_allow_for_session_skips_later_approvals(tmp_path: Path) -> None:
    interpreter, _ = make(
        tmp_path,
        [
            call("write_file", path="a.txt", content="1"),
            "ok",
            call("write_file", path="b.txt", content="2"),
            "ok again",
        ],
    )
    async with interpreter.subscribe() as sub:
        await interpreter.send("first")
        request = await next_event(sub, lambda e: isinstance(e, ApprovalRequested))
        assert isinstance(request, ApprovalRequested)
        interpreter.approve(request.approval_id, ApprovalDecision.ALLOW_SESSION)
        _ = [e async for e in sub.until_idle()]
    events = [e async for e in interpreter.chat("second")]
    assert not of_type(events, "approval_requested")
    assert (tmp_path / "a.txt").read_text() == "1" and (tmp_path / "b.txt").read_text() == "2"


async def test_no_answer_in_time_means_deny(tmp_path: Path) -> None:
    interpreter, _ = make(tmp_path, [call("run_python", code="print(1)"), "ok"])
    interpreter.session.settings = interpreter.session.settings.model_copy(
        update={"approval_timeout_s": 0.05}
    )
    events = [e async for e in interpreter.chat("go")]
    resolved = of_type(events, "approval_resolved")
    assert resolved and resolved[0].decision is ApprovalDecision.DENY
    assert resolved[0].by == "timeout"
    assert interpreter.state is InterpreterState.STOP


async def test_stop_while_waiting_for_approval_denies_and_stops(tmp_path: Path) -> None:
    interpreter, _ = make(tmp_path, [call("run_python", code="print(1)")])
    async with interpreter.subscribe() as sub:
        await interpreter.send("go")
        await next_event(sub, lambda e: isinstance(e, ApprovalRequested))
        await interpreter.stop()
        after = sub.pending()
    assert interpreter.state is InterpreterState.STOP
    assert [e.to_state for e in after if isinstance(e, StateChanged)] == [InterpreterState.STOP]
    assert of_type(after, "approval_resolved")[0].by == "policy"
    assert interpreter.pending_approvals == ()


async def test_policy_deny_refuses_without_asking(tmp_path: Path) -> None:
    interpreter, _ = make(
        tmp_path,
        [call("run_python", code="print(1)"), "fine"],
        permissions={"run_python": PermissionMode.DENY},
    )
    events = [e async for e in interpreter.chat("go")]
    assert not of_type(events, "approval_requested")
    finished = of_type(events, "tool_call_finished")[0]
    assert finished.result.is_error and "not allowed" in finished.result.content


async def test_provider_error_is_reported_and_the_session_stays_usable(tmp_path: Path) -> None:
    interpreter, _ = make(tmp_path, [ModelRateLimited("slow down", provider="x"), "recovered"])
    events = [e async for e in interpreter.chat("hello")]
    errors = of_type(events, "error")
    assert errors and "slow down" in errors[0].message
    assert of_type(events, "run_finished")[0].outcome is RunOutcome.ERROR
    assert interpreter.state is InterpreterState.STOP
    assert interpreter.session.history[0].content == "hello"
    events = [e async for e in interpreter.chat("again")]
    assert interpreter.session.history[-1].content == "recovered"


async def test_unknown_tool_and_malformed_arguments_go_back_to_the_model(tmp_path: Path) -> None:
    from schema import ModelResponse, ToolCall

    bad_json = ModelResponse(tool_calls=(ToolCall(id="c2", name="list_files", arguments="{oops"),))
    interpreter, model = make(tmp_path, [call("no_such_tool"), bad_json, "sorry"])
    events = [e async for e in interpreter.chat("go")]
    results = [e.result for e in of_type(events, "tool_call_finished")]
    assert results[0].is_error and "no_such_tool" in results[0].content
    assert results[1].is_error and "JSON" in results[1].content
    assert interpreter.session.history[-1].content == "sorry"
    assert isinstance(model, ScriptedModel) and len(model.requests) == 3


async def test_parallel_tool_calls_run_concurrently_with_results_in_call_order(
    tmp_path: Path,
) -> None:
    both_running = asyncio.Event()
    running = 0

    @tool
    async def work(n: int) -> int:
        """Pretend to work."""
        nonlocal running
        running += 1
        if running == 2:
            both_running.set()
        await both_running.wait()
        await asyncio.sleep(0.01 * (3 - n))
        return n * 10

    interpreter, _ = make(
        tmp_path, [calls(("work", {"n": 1}), ("work", {"n": 2})), "done"], tools=[work]
    )
    events = [e async for e in interpreter.chat("go")]
    finished_order = [e.result.content for e in of_type(events, "tool_call_finished")]
    assert finished_order == ["20", "10"]  # n=2 finishes first
    tool_messages = [m.content for m in interpreter.session.history if m.role is Role.TOOL]
    assert tool_messages == ["10", "20"]  # appended in call order


@pytest.mark.parametrize("ids", [("same", "same"), ("", ""), ("", "x")])
async def test_calls_sharing_an_id_or_without_one_each_get_their_own_result(
    tmp_path: Path, ids: tuple[str, str]
) -> None:
    """Some servers repeat an id within a reply or send none; each call still runs and is
    answered on its own, and the history stays sendable (every id answered once)."""
    from schema import ModelResponse, ToolCall

    @tool
    async def shout(word: str) -> str:
        """Say it louder."""
        return word.upper()

    reply = ModelResponse(
        tool_calls=(
            ToolCall(id=ids[0], name="shout", arguments='{"word": "a"}'),
            ToolCall(id=ids[1], name="shout", arguments='{"word": "b"}'),
        )
    )
    interpreter, _ = make(tmp_path, [reply, "done"], tools=[shout])
    events = [e async for e in interpreter.chat("go")]
    assert of_type(events, "run_finished")[0].outcome is RunOutcome.COMPLETED
    history = interpreter.session.history
    asked = [c.id for m in history for c in m.tool_calls]
    answers = {m.tool_call_id: m.content for m in history if m.role is Role.TOOL}
    assert len(set(asked)) == 2 and all(asked)
    assert [answers[i] for i in asked] == ["A", "B"]


@pytest.mark.parametrize(("steps", "said"), [(3, "3 steps"), (1, "1 step")])
async def test_max_iterations_stops_the_loop_and_says_so(
    tmp_path: Path, steps: int, said: str
) -> None:
    interpreter, _ = make(tmp_path, [call("list_files")] * steps)
    interpreter.session.settings = interpreter.session.settings.model_copy(
        update={"max_iterations": steps}
    )
    events = [e async for e in interpreter.chat("loop")]
    finished = of_type(events, "run_finished")[0]
    assert finished.outcome is RunOutcome.MAX_ITERATIONS
    calls = "model call" if steps == 1 else "model calls"
    assert finished.detail == f"stopped after {steps} {calls}"
    note = interpreter.session.history[-1]
    assert note.metadata.get("truncated") is True
    assert note.content.startswith(f"I stopped after {said} (the maximum for one turn)")


async def test_many_sessions_run_concurrently_without_sharing_state(tmp_path: Path) -> None:
    pairs = [make(tmp_path / str(i), [f"answer {i}"], delay_s=0.001) for i in range(40)]

    async def run(index: int) -> list[str]:
        interpreter, _ = pairs[index]
        _ = [e async for e in interpreter.chat(f"question {index}")]
        return [m.content for m in interpreter.session.history]

    histories = await asyncio.gather(*(run(i) for i in range(40)))
    assert histories == [[f"question {i}", f"answer {i}"] for i in range(40)]


async def test_retry_edit_and_clear(tmp_path: Path) -> None:
    interpreter, _model = make(tmp_path, ["one", "two", "three"])
    _ = [e async for e in interpreter.chat("q")]
    await interpreter.retry()
    await interpreter.wait_idle()
    assert [m.content for m in interpreter.session.history] == ["q", "two"]
    await interpreter.edit_last("q2")
    await interpreter.wait_idle()
    assert [m.content for m in interpreter.session.history] == ["q2", "three"]
    await interpreter.clear()
    assert interpreter.session.history == []
    with pytest.raises(InvalidRequest):
        await interpreter.retry()


async def test_retry_and_edit_keep_or_replace_the_attached_images(tmp_path: Path) -> None:
    interpreter, model = make(tmp_path, ["one", "two", "three"])
    assert isinstance(model, ScriptedModel)
    cat = ImagePart(media_type="image/png", data="iVBORw0KGgo=")
    dog = ImagePart(url="https://example.org/dog.png")
    await interpreter.send("what is this?", images=[cat])
    await interpreter.wait_idle()
    await interpreter.retry()
    await interpreter.wait_idle()
    assert interpreter.session.history[0].images == (cat,)
    assert model.requests[-1].messages[-1].images == (cat,)  # the model saw it again
    await interpreter.edit_last("", images=[dog])  # an edit may be images alone
    await interpreter.wait_idle()
    assert interpreter.session.history[0].images == (dog,)
    assert [m.content for m in interpreter.session.history] == ["", "three"]


async def test_every_completed_message_is_announced(tmp_path: Path) -> None:
    interpreter, _ = make(tmp_path, [call("list_files"), "done"])
    events = [e async for e in interpreter.chat("go")]
    announced = [e.message.id for e in events if isinstance(e, MessageCompleted)]
    assert announced == [m.id for m in interpreter.session.history]


async def test_retry_right_after_stop_is_announced_works(tmp_path: Path) -> None:
    from gui_agent import SessionManager, StaticCatalog
    from gui_agent.store import SQLiteStore

    manager = SessionManager(
        models=StaticCatalog(ScriptedModel(["one", "two"])),
        store=SQLiteStore(tmp_path / "db.sqlite"),
        workspace_root=tmp_path,
    )
    await manager.start()
    interpreter = await manager.create("someone")
    async with interpreter.subscribe() as sub:
        await interpreter.send("q")
        await next_event(
            sub, lambda e: isinstance(e, StateChanged) and e.to_state is InterpreterState.STOP
        )
        assert interpreter.busy  # still saving the session record to SQLite
        await interpreter.retry()
    await interpreter.wait_idle()
    assert [m.content for m in interpreter.session.history] == ["q", "two"]
    await manager.close()


async def test_switching_role_routes_the_next_turn_and_is_announced(tmp_path: Path) -> None:
    from schema import AgentName, AgentSwitched

    interpreter, model = make(tmp_path, ["as executor", "as thinker"])
    _ = [e async for e in interpreter.chat("one")]
    async with interpreter.subscribe() as sub:
        await interpreter.set_agent(AgentName.THOUGHT)
        await interpreter.send("two")
        events = [e async for e in sub.until_idle()]
    switched = [e for e in events if isinstance(e, AgentSwitched)]
    assert [(e.from_agent, e.to_agent) for e in switched] == [
        (AgentName.AGENT_EXECUTOR, AgentName.THOUGHT)
    ]
    assert interpreter.session.history[1].agent is AgentName.AGENT_EXECUTOR
    assert interpreter.session.history[-1].agent is AgentName.THOUGHT
    assert isinstance(model, ScriptedModel)
    assert model.requests[0].tools and model.requests[1].tools == ()  # thinkers get no tools
    with pytest.raises(InvalidRequest, match="choose one of: executor"):
        await interpreter.set_agent(AgentName.OTHER)


async def test_a_message_sent_after_a_role_switch_during_a_turn_goes_to_the_new_role(
    tmp_path: Path,
) -> None:
    """The running turn used to take it in before its next model call: the old role
    answered it (with its tools), and the switch was kept on the message after it."""
    from schema import AgentName

    entered, release = asyncio.Event(), asyncio.Event()

    @tool
    async def measure() -> str:
        """Measure, slowly."""
        entered.set()
        await release.wait()
        return "3 m"

    interpreter, model = make(
        tmp_path,
        [call("measure"), "It is 3 m.", "Thinking it over: fine."],
        tools=[measure],
        permissions={"measure": PermissionMode.ALLOW},
    )
    await interpreter.send("measure it")
    await entered.wait()
    await interpreter.set_agent(AgentName.THOUGHT)
    second = await interpreter.send("now only think about it")
    release.set()
    await interpreter.wait_idle()
    history = interpreter.session.history
    assert [(m.content, m.agent) for m in history if m.role is Role.ASSISTANT][-2:] == [
        ("It is 3 m.", AgentName.AGENT_EXECUTOR),  # the turn it ran, finished by its role
        ("Thinking it over: fine.", AgentName.THOUGHT),
    ]
    [kept] = [m for m in history if m.id == second.id]
    assert kept.metadata["switched"]["to_agent"] == AgentName.THOUGHT.value
    assert isinstance(model, ScriptedModel)
    executor_asked = model.requests[1]  # after the tool: the person's new message is not in it
    assert [m.content for m in executor_asked.messages if m.role is Role.USER] == ["measure it"]
    assert model.requests[2].tools == ()  # the thinker's own turn: no tools


async def test_tool_steps_point_at_the_message_that_called_them(tmp_path: Path) -> None:
    from schema import ToolCallStarted

    interpreter, _ = make(tmp_path, [call("run_python", code="print(1)"), "ok"])
    async with interpreter.subscribe() as sub:
        await interpreter.send("go")
        request = await next_event(sub, lambda e: isinstance(e, ApprovalRequested))
        assert isinstance(request, ApprovalRequested)
        interpreter.approve(request.approval_id, ApprovalDecision.ALLOW_ONCE)
        events = [e async for e in sub.until_idle()]
    started = [e for e in events if isinstance(e, ToolCallStarted)]
    caller = next(m for m in interpreter.session.history if m.tool_calls)
    assert started and started[0].parent_message_id == caller.id
