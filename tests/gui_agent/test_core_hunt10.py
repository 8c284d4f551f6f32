"""Defects found driving the interpreter, AutoChat and the roles from Python (hunt 10), each
with its test."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from connectors.function import FunctionInfo, FunctionModel
from connectors.scripted import ScriptedModel, call
from gui_agent.agents import ThoughtAgent
from gui_agent.agents.base import AgentDeps
from gui_agent.exceptions import ModelServerError
from gui_agent.interpreter import Interpreter
from gui_agent.quick import create_interpreter
from gui_agent.session import Session
from gui_agent.tools import tool
from schema import (
    AgentName,
    ApprovalDecision,
    ApprovalRequested,
    ApprovalResolved,
    AutoChatSettings,
    AutoChatStopped,
    AutoChatStopReason,
    AutoChatTurn,
    ErrorEvent,
    Event,
    ImagePart,
    InterpreterState,
    Message,
    MessageCompleted,
    MessageStarted,
    MessageStatus,
    MessageType,
    ModelResponse,
    Role,
    RunFinished,
    RunOutcome,
    StateChanged,
    TextDelta,
    ToolCall,
    Usage,
    UsageReported,
    new_id,
)
from tests.gui_agent.helpers import make, next_event


def _slow_tool(started: asyncio.Event, seconds: float) -> object:
    @tool
    async def slow() -> str:
        """Work for a while."""
        started.set()
        await asyncio.sleep(seconds)  # a long tool, not the test waiting
        return "done"

    return slow


# -- AutoChat switched on while a turn runs ---------------------------------------------------


async def test_autochat_switched_on_while_a_turn_runs_goes_on_after_that_turn(
    tmp_path: Path,
) -> None:
    gate = asyncio.Event()

    async def model(messages: list[Message], info: FunctionInfo) -> str:
        if info.call_number == 1:
            await gate.wait()
        return f"reply {info.call_number}"

    interpreter, _ = make(tmp_path, FunctionModel(model))
    async with interpreter.subscribe() as sub:
        await interpreter.send("write the report")
        await next_event(sub, lambda e: e.type == "message_started")
        await interpreter.update(autochat=AutoChatSettings(enabled=True, max_turns=2))
        gate.set()
        events = [e async for e in sub.until_idle()]
    assert [e.turn for e in events if isinstance(e, AutoChatTurn)] == [1, 2]
    ends = [e for e in events if isinstance(e, AutoChatStopped)]
    assert len(ends) == 1 and ends[0].reason is AutoChatStopReason.MAX_TURNS
    assert interpreter.session.goal == "write the report"
    assert [m.content for m in interpreter.session.history if m.role is Role.ASSISTANT] == [
        "reply 1",
        "reply 2",
        "reply 3",
    ]
    assert interpreter.state is InterpreterState.STOP and not interpreter.busy


# -- the time budget belongs to one AutoChat run, as it is set now ----------------------------


async def test_a_message_sent_during_an_automatic_turn_is_answered_not_cut_by_the_old_budget(
    tmp_path: Path,
) -> None:
    """The person writes during an automatic turn: that starts a new AutoChat run with a
    clock of its own. The old run's time budget must not stop the turn later, file the
    message unanswered and end the new run."""
    started = asyncio.Event()
    interpreter, _ = make(
        tmp_path,
        ["first", call("slow"), "answer to the new instruction", "continued"],
        tools=[_slow_tool(started, 0.6)],  # type: ignore[list-item]
        permissions={"slow": "allow"},  # type: ignore[dict-item]
        autochat=AutoChatSettings(enabled=True, max_turns=1, time_budget_s=0.3),
    )
    interpreter._auto.clock = lambda: 0.0  # no budget is spent but by the running turn's timer
    async with interpreter.subscribe() as sub:
        await interpreter.send("start")
        await started.wait()
        await interpreter.send("new instruction")
        events = [e async for e in sub.until_idle()]
    reasons = [e.reason for e in events if isinstance(e, AutoChatStopped)]
    assert reasons == [AutoChatStopReason.USER_MESSAGE, AutoChatStopReason.MAX_TURNS]
    history = interpreter.session.history
    tool_result = next(m for m in history if m.role is Role.TOOL)
    assert tool_result.content == "done" and tool_result.status is MessageStatus.COMPLETE
    asked = next(i for i, m in enumerate(history) if m.content == "new instruction")
    assert history[asked + 1].content == "answer to the new instruction"
    outcomes = [e.outcome for e in events if isinstance(e, RunFinished)]
    assert RunOutcome.INTERRUPTED not in outcomes


@pytest.mark.parametrize("new_budget", [None, 60.0])
async def test_a_time_budget_removed_or_raised_during_an_automatic_turn_no_longer_stops_it(
    tmp_path: Path, new_budget: float | None
) -> None:
    started = asyncio.Event()
    interpreter, _ = make(
        tmp_path,
        ["first", call("slow"), "finished the work"],
        tools=[_slow_tool(started, 0.6)],  # type: ignore[list-item]
        permissions={"slow": "allow"},  # type: ignore[dict-item]
        autochat=AutoChatSettings(enabled=True, max_turns=1, time_budget_s=0.3),
    )
    interpreter._auto.clock = lambda: 0.0
    async with interpreter.subscribe() as sub:
        await interpreter.send("start")
        await started.wait()
        await interpreter.update(
            autochat=AutoChatSettings(enabled=True, max_turns=1, time_budget_s=new_budget)
        )
        events = [e async for e in sub.until_idle()]
    ends = [e for e in events if isinstance(e, AutoChatStopped)]
    assert len(ends) == 1 and ends[0].reason is AutoChatStopReason.MAX_TURNS
    outcomes = [e.outcome for e in events if isinstance(e, RunFinished)]
    assert outcomes == [RunOutcome.COMPLETED, RunOutcome.COMPLETED]  # the person's, the automatic
    assert interpreter.session.history[-1].content == "finished the work"


async def test_a_time_budget_lowered_during_an_automatic_turn_stops_it_where_the_new_one_ends(
    tmp_path: Path,
) -> None:
    started = asyncio.Event()
    interpreter, _ = make(
        tmp_path,
        ["first", call("slow"), "never reached"],
        tools=[_slow_tool(started, 3600.0)],  # type: ignore[list-item]
        permissions={"slow": "allow"},  # type: ignore[dict-item]
        autochat=AutoChatSettings(enabled=True, max_turns=1, time_budget_s=3600.0),
    )
    interpreter._auto.clock = lambda: 0.0
    async with interpreter.subscribe() as sub:
        await interpreter.send("start")
        await started.wait()
        await interpreter.update(
            autochat=AutoChatSettings(enabled=True, max_turns=1, time_budget_s=0.2)
        )
        async with asyncio.timeout(10):  # without the new budget: an hour
            events = [e async for e in sub.until_idle()]
    ends = [e for e in events if isinstance(e, AutoChatStopped)]
    assert len(ends) == 1 and ends[0].reason is AutoChatStopReason.TIME_BUDGET
    outcomes = [e.outcome for e in events if isinstance(e, RunFinished)]
    assert outcomes == [RunOutcome.COMPLETED, RunOutcome.INTERRUPTED]
    assert interpreter.state is InterpreterState.STOP and not interpreter.busy


# -- a supervisor's worker stopped mid-reply --------------------------------------------------


async def test_a_workers_reply_stopped_mid_stream_is_announced_in_the_usage(
    tmp_path: Path,
) -> None:
    async def model(messages: list[Message], info: FunctionInfo) -> object:
        if info.call_number == 1:
            return call("delegate", worker="agent_executor", task="write a long text")

        async def words() -> AsyncIterator[str]:
            yield "The first words of a long text "
            await asyncio.Event().wait()  # the rest never comes before the Stop

        return words()

    interpreter, _ = make(tmp_path, FunctionModel(model))  # type: ignore[arg-type]
    await interpreter.set_agent(AgentName.SUPERVISOR)
    async with interpreter.subscribe() as sub:
        await interpreter.send("delegate a long text")
        first = await next_event(sub, lambda e: isinstance(e, UsageReported))
        await next_event(sub, lambda e: isinstance(e, TextDelta))
        assert await interpreter.stop() is True
        after = sub.pending()
    assert isinstance(first, UsageReported) and first.turn.requests == 1
    usages = [e for e in after if isinstance(e, UsageReported)]
    assert len(usages) == 1, "the worker's cut-short call is never announced"
    said = usages[0]
    assert said.total == interpreter.session.usage and said.total.requests == 2
    assert said.turn.requests == 2 and said.turn.estimated  # supervisor's call + the worker's
    assert said.turn.input_tokens > first.turn.input_tokens
    assert interpreter.session.unreported_usage is None


async def test_a_worker_that_fails_is_an_error_result_the_supervisor_reads_and_answers(
    tmp_path: Path,
) -> None:
    """A worker's model fails mid-reply: like any tool's error, the failure comes back to
    the supervisor as the delegate call's result; the supervisor's turn goes on and it
    answers the person. What the worker had streamed stays, shown as failed."""

    async def model(messages: list[Message], info: FunctionInfo) -> object:
        if info.call_number == 1:
            return call("delegate", worker="agent_executor", task="fetch the numbers")
        if info.call_number == 2:

            async def failing() -> AsyncIterator[str]:
                yield "Fetching the "
                raise ModelServerError("the server answered 500", provider="function")

            return failing()
        told = [m for m in messages if m.role is Role.TOOL][-1]  # the delegate call's result
        assert "ModelServerError" in told.content
        return "The worker could not fetch the numbers: the model server failed."

    interpreter, _ = make(tmp_path, FunctionModel(model))  # type: ignore[arg-type]
    await interpreter.set_agent(AgentName.SUPERVISOR)
    events = [e async for e in interpreter.chat("get me the numbers")]
    outcomes = [e.outcome for e in events if isinstance(e, RunFinished)]
    assert outcomes == [RunOutcome.COMPLETED]
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert len(errors) == 1 and "worker failed" in errors[0].message
    history = interpreter.session.history
    assert history[-1].content.startswith("The worker could not fetch")
    partial = next(m for m in history if m.content == "Fetching the ")
    assert partial.status is MessageStatus.ERROR and partial.display_only
    result = next(m for m in history if m.role is Role.TOOL)
    assert result.metadata["is_error"] is True and "server answered 500" in result.content
    assert not interpreter.streaming and interpreter.state is InterpreterState.STOP
    # every usage said is newer than the one before it, and the last is the session's
    totals = [e.total.requests for e in events if isinstance(e, UsageReported)]
    assert totals == sorted(totals) and totals[-1] == interpreter.session.usage.requests == 3


# -- a message sent while a Stop is ending the turn --------------------------------------------


async def test_a_message_sent_while_stop_ends_the_turn_starts_the_next_turn(
    tmp_path: Path,
) -> None:
    """Stop, then at once a new message, while the stopped tool still cleans up (as
    run_python does, ending its processes): the message belongs to the next turn and is
    answered, not filed unanswered with the stopped turn's queue."""
    interpreter, cleaning, stopping = await _stopping_a_slow_tool(tmp_path)
    async with interpreter.subscribe() as sub:
        await cleaning.wait()
        await interpreter.send("no, run the tests instead")
        assert await stopping is True
        await interpreter.wait_idle()
        events = sub.pending()
    history = interpreter.session.history
    asked = next(i for i, m in enumerate(history) if m.content == "no, run the tests instead")
    assert history[asked + 1 :] and history[-1].content == "Here is the test run instead."
    outcomes = [e.outcome for e in events if isinstance(e, RunFinished)]
    assert outcomes == [RunOutcome.INTERRUPTED, RunOutcome.COMPLETED]
    assert interpreter.state is InterpreterState.STOP and not interpreter.busy


async def test_chat_while_stop_ends_the_turn_yields_the_new_turn_to_its_end(
    tmp_path: Path,
) -> None:
    interpreter, cleaning, stopping = await _stopping_a_slow_tool(tmp_path)
    await cleaning.wait()
    events = [e async for e in interpreter.chat("no, run the tests instead")]
    assert await stopping is True
    assert [e.outcome for e in events if isinstance(e, RunFinished)] == [RunOutcome.COMPLETED]
    assert interpreter.session.history[-1].content == "Here is the test run instead."
    assert not interpreter.busy


async def _stopping_a_slow_tool(
    tmp_path: Path,
) -> tuple[Interpreter, asyncio.Event, asyncio.Task[bool]]:
    """An interpreter whose turn runs a tool that takes a moment to end once stopped; the
    Stop under way, and an event set when the tool began to clean up."""
    started, cleaning = asyncio.Event(), asyncio.Event()

    @tool
    async def build() -> str:
        """Build the project."""
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cleaning.set()
            await asyncio.sleep(0.2)  # ending what it started takes a moment
        return "built"

    interpreter, _ = make(
        tmp_path,
        [call("build"), "Here is the test run instead."],
        tools=[build],
        permissions={"build": "allow"},  # type: ignore[dict-item]
    )
    await interpreter.send("build it")
    await started.wait()
    return interpreter, cleaning, asyncio.create_task(interpreter.stop())


# -- the title comes from the person's words only --------------------------------------------

_PNG = ImagePart(
    media_type="image/png", data=base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(16)).decode()
)


@pytest.mark.parametrize(
    ("agent", "autochat"),
    [
        (AgentName.CREW, None),  # the reviewer's hand-over
        (AgentName.LLM_PLANNER, None),  # a plan step
        (AgentName.AGENT_EXECUTOR, AutoChatSettings(enabled=True, max_turns=1)),  # AutoChat
    ],
)
async def test_a_chat_opened_with_images_only_is_not_named_after_an_agents_own_message(
    tmp_path: Path, agent: AgentName, autochat: AutoChatSettings | None
) -> None:
    interpreter, _ = make(tmp_path, ScriptedModel(default="a cat"), autochat=autochat)
    await interpreter.set_agent(agent)
    await interpreter.send("", images=(_PNG,))
    await interpreter.wait_idle()
    assert any(m.role is Role.USER and m.content for m in interpreter.session.history)
    assert interpreter.session.title == ""
    await interpreter.update(autochat=AutoChatSettings())
    _ = [e async for e in interpreter.chat("Which breed is the cat?")]
    assert interpreter.session.title == "Which breed is the cat?"


# -- a custom role that asks two approvals at once ---------------------------------------------


class _TwoQuestionsAtOnce:
    """A developer's role that puts two questions to the person at the same time (say, for
    two sub-tasks it runs in parallel) and goes on when both are answered."""

    @property
    def name(self) -> AgentName:
        return AgentName.OTHER

    @property
    def description(self) -> str:
        return "Asks two approvals at once."

    async def run(self, session: Session, deps: AgentDeps, prompt: Message) -> AsyncIterator[Event]:
        asks = [("write_file", '{"path": "a.txt"}'), ("run_python", '{"code": "1"}')]
        ids = []
        for name, arguments in asks:
            approval_id = new_id()
            deps.approvals.open(approval_id)
            ids.append(approval_id)
            call_ = ToolCall(id=approval_id, name=name, arguments=arguments)
            yield ApprovalRequested(approval_id=approval_id, call=call_, summary=f"Run {name}")
        verdicts = await asyncio.gather(*(deps.approvals.wait(i, None) for i in ids))
        for approval_id, verdict in zip(ids, verdicts, strict=True):
            yield ApprovalResolved(approval_id=approval_id, decision=verdict.decision)
        reply = Message(role=Role.ASSISTANT, content="both answered", agent=self.name)
        session.add(reply)
        yield MessageCompleted(message=reply)


async def test_a_role_may_ask_two_approvals_at_once_and_waits_for_both(tmp_path: Path) -> None:
    interpreter = create_interpreter(
        ScriptedModel(), workdir=tmp_path, architectures={AgentName.OTHER: _TwoQuestionsAtOnce()}
    )
    async with interpreter.subscribe() as sub:
        await interpreter.send("do both")
        for _ in range(2):
            await next_event(sub, lambda e: isinstance(e, ApprovalRequested))
        assert interpreter.state is InterpreterState.WAITING
        first, second = interpreter.pending_approvals
        assert interpreter.approve(first.approval_id, ApprovalDecision.ALLOW_ONCE)
        assert interpreter.approve(second.approval_id, ApprovalDecision.DENY)
        events = [e async for e in sub.until_idle()]
    assert not [e for e in events if isinstance(e, ErrorEvent)]
    assert [e.outcome for e in events if isinstance(e, RunFinished)] == [RunOutcome.COMPLETED]
    states = [e.to_state for e in events if isinstance(e, StateChanged)]
    assert states == [InterpreterState.RUNNING, InterpreterState.STOP]  # resumed once, when both
    assert interpreter.session.history[-1].content == "both answered"


# -- the token budget between plan steps and crew members --------------------------------------


async def test_the_token_budget_ends_a_plan_between_steps_that_call_no_tool(
    tmp_path: Path,
) -> None:
    def costing(text: str) -> ModelResponse:  # every call costs 100 tokens
        return ModelResponse(text=text, usage=Usage(input_tokens=60, output_tokens=40))

    plan = "1. Read\n2. Sum\n3. Check\n4. Report"
    interpreter, model = make(
        tmp_path,
        [costing(plan), costing("read"), costing("summed"), costing("x"), costing("y")],
        autochat=AutoChatSettings(enabled=True, max_turns=3, token_budget=250),
    )
    await interpreter.set_agent(AgentName.LLM_PLANNER)
    events = [e async for e in interpreter.chat("add up the numbers")]
    finished = [e for e in events if isinstance(e, RunFinished)]
    assert [e.outcome for e in finished] == [RunOutcome.BUDGET]
    assert "after plan step 2 of 4; steps 3–4 were not run" in finished[0].detail
    assert isinstance(model, ScriptedModel) and len(model.requests) == 3  # plan, step 1, step 2
    ends = [e for e in events if isinstance(e, AutoChatStopped)]
    assert len(ends) == 1 and ends[0].reason is AutoChatStopReason.TOKEN_BUDGET


async def test_the_token_budget_spent_by_the_doer_ends_the_crews_turn_before_the_reviewer(
    tmp_path: Path,
) -> None:
    doer = ModelResponse(text="done: the text", usage=Usage(input_tokens=90, output_tokens=60))
    interpreter, model = make(
        tmp_path,
        [doer, "reviewed"],
        autochat=AutoChatSettings(enabled=True, max_turns=3, token_budget=100),
    )
    await interpreter.set_agent(AgentName.CREW)
    events = [e async for e in interpreter.chat("write it")]
    finished = [e for e in events if isinstance(e, RunFinished)]
    assert [e.outcome for e in finished] == [RunOutcome.BUDGET]
    assert "not run: reviewer" in finished[0].detail
    assert isinstance(model, ScriptedModel) and len(model.requests) == 1
    assert interpreter.session.history[-1].content == "done: the text"


# -- what a person approves is what runs ---------------------------------------------------------


async def test_a_call_whose_arguments_are_encoded_twice_is_shown_for_approval_as_it_runs(
    tmp_path: Path,
) -> None:
    """Some models encode a call's arguments twice; the tools read them (hunt 9). The
    approval must show the code that will run, not "arguments are not a valid JSON
    object", which leads a person to deny a call that would have run fine."""
    code = "print(6 * 7)"
    twice = ToolCall(
        id="call_twice", name="run_python", arguments=json.dumps(json.dumps({"code": code}))
    )
    interpreter, _ = make(
        tmp_path, [ModelResponse(tool_calls=(twice,), finish_reason="tool_calls"), "42"]
    )
    async with interpreter.subscribe() as sub:
        await interpreter.send("compute 6 * 7")
        asked = await next_event(sub, lambda e: isinstance(e, ApprovalRequested))
        assert isinstance(asked, ApprovalRequested)
        assert (asked.summary, asked.detail, asked.language) == ("Run Python code", code, "python")
        interpreter.approve(asked.approval_id, ApprovalDecision.ALLOW_ONCE)
        _ = [e async for e in sub.until_idle()]
    result = next(m for m in interpreter.session.history if m.role is Role.TOOL)
    assert result.content.startswith("42") and not result.metadata["is_error"]


# -- AutoChat's delay, changed while it is waited out ------------------------------------------


async def test_a_delay_shortened_while_autochat_waits_starts_the_next_turn_then(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(
        tmp_path,
        ["first", "second"],
        autochat=AutoChatSettings(enabled=True, max_turns=1, delay_s=3600.0),
    )
    async with interpreter.subscribe() as sub:
        await interpreter.send("go on by yourself")
        await next_event(sub, lambda e: isinstance(e, AutoChatTurn))
        await interpreter.update(autochat=AutoChatSettings(enabled=True, max_turns=1, delay_s=0.05))
        async with asyncio.timeout(10):  # without the new delay: an hour
            events = [e async for e in sub.until_idle()]
    ends = [e for e in events if isinstance(e, AutoChatStopped)]
    assert len(ends) == 1 and ends[0].reason is AutoChatStopReason.MAX_TURNS and ends[0].turns == 1
    assert interpreter.session.history[-1].content == "second"


async def test_retry_right_after_stop_waits_for_the_turn_to_end_instead_of_refusing(
    tmp_path: Path,
) -> None:
    interpreter, cleaning, stopping = await _stopping_a_slow_tool(tmp_path)
    await cleaning.wait()
    again = await interpreter.retry()  # before: Conflict "stop the running turn first"
    assert again.content == "build it"
    assert await stopping is True
    await interpreter.wait_idle()
    history = interpreter.session.history
    assert [m.content for m in history if m.role is Role.USER] == ["build it"]
    assert history[-1].content == "Here is the test run instead."


# -- a tool that catches the Stop itself -------------------------------------------------------


@pytest.mark.parametrize("swallow", ["returns", "raises"])
async def test_stop_ends_the_turn_even_when_a_tool_catches_the_cancellation(
    tmp_path: Path, swallow: str
) -> None:
    """Tools written with `except BaseException` (or `except CancelledError`) catch the
    Stop meant for the turn and return, or raise something else. The Stop must still end
    the turn: no further model call, the call answered as interrupted."""
    started = asyncio.Event()

    @tool
    async def stubborn() -> str:
        """Fetch a page."""
        started.set()
        try:
            await asyncio.Event().wait()
        except BaseException as error:
            if swallow == "raises":
                raise RuntimeError("fetch aborted") from error
            return f"fetch aborted ({type(error).__name__})"
        return "fetched"

    interpreter, model = make(
        tmp_path,
        [call("stubborn"), "never asked", "never asked either"],
        tools=[stubborn],
        permissions={"stubborn": "allow"},  # type: ignore[dict-item]
    )
    async with interpreter.subscribe() as sub:
        await interpreter.send("fetch it")
        await started.wait()
        async with asyncio.timeout(10):
            assert await interpreter.stop() is True
        events = sub.pending()
    assert [e.outcome for e in events if isinstance(e, RunFinished)] == [RunOutcome.INTERRUPTED]
    assert isinstance(model, ScriptedModel) and len(model.requests) == 1
    result = interpreter.session.history[-1]
    assert result.role is Role.TOOL and result.status is MessageStatus.INTERRUPTED
    assert interpreter.state is InterpreterState.STOP and not interpreter.busy


# -- a custom role's edge output never leaves the session stuck ---------------------------------


class _ConsoleStreamer:
    """A developer's role that streams a program's console output as a TOOL-role message,
    then waits (the program runs on)."""

    def __init__(self, output_started: asyncio.Event) -> None:
        self._started = output_started

    @property
    def name(self) -> AgentName:
        return AgentName.OTHER

    @property
    def description(self) -> str:
        return "Streams console output."

    async def run(self, session: Session, deps: AgentDeps, prompt: Message) -> AsyncIterator[Event]:
        message_id = new_id()
        yield MessageStarted(
            message_id=message_id, role=Role.TOOL, message_type=MessageType.CONSOLE
        )
        yield TextDelta(message_id=message_id, delta="compiling…\n")
        self._started.set()
        await asyncio.Event().wait()
        yield TextDelta(message_id=message_id, delta="never")


async def test_stop_during_a_streamed_tool_role_message_keeps_it_and_ends_the_turn(
    tmp_path: Path,
) -> None:
    started = asyncio.Event()
    interpreter = create_interpreter(
        ScriptedModel(default="hello"),
        workdir=tmp_path,
        architectures={
            AgentName.OTHER: _ConsoleStreamer(started),
            AgentName.THOUGHT: ThoughtAgent(),
        },
    )
    await interpreter.send("build")
    await started.wait()
    assert await interpreter.stop() is True
    assert interpreter.state is InterpreterState.STOP and not interpreter.busy
    kept = interpreter.session.history[-1]
    assert kept.content == "compiling…\n" and kept.status is MessageStatus.INTERRUPTED
    assert kept.display_only  # output shown to people; no model call answers to it
    assert not interpreter.streaming
    # the session goes on
    await interpreter.set_agent(AgentName.THOUGHT)
    events = [e async for e in interpreter.chat("and now?")]
    assert [e.outcome for e in events if isinstance(e, RunFinished)] == [RunOutcome.COMPLETED]


class _BrokenCall:
    """A developer's role that records a tool call without an id, then fails."""

    @property
    def name(self) -> AgentName:
        return AgentName.OTHER

    @property
    def description(self) -> str:
        return "Fails after a call without an id."

    async def run(self, session: Session, deps: AgentDeps, prompt: Message) -> AsyncIterator[Event]:
        reply = Message(
            role=Role.ASSISTANT, tool_calls=(ToolCall(id="", name="probe"),), agent=self.name
        )
        session.add(reply)
        yield MessageCompleted(message=reply)
        raise RuntimeError("the role broke")


async def test_a_turn_that_cannot_be_closed_still_ends_and_ends_autochat(tmp_path: Path) -> None:
    interpreter = create_interpreter(
        ScriptedModel(default="hello"),
        workdir=tmp_path,
        architectures={AgentName.OTHER: _BrokenCall()},
        autochat=AutoChatSettings(enabled=True, max_turns=3),
    )
    events = [e async for e in interpreter.chat("go")]
    assert interpreter.state is InterpreterState.STOP and not interpreter.busy
    assert not interpreter.autochat_active
    ends = [e for e in events if isinstance(e, AutoChatStopped)]
    assert len(ends) == 1 and ends[0].reason is AutoChatStopReason.ERROR
    assert [e.outcome for e in events if isinstance(e, RunFinished)] == [RunOutcome.ERROR]
    assert any(isinstance(e, ErrorEvent) for e in events)
