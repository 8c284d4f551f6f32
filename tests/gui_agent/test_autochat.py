"""AutoChat: continues from STOP by itself, re-pins the goal, and stops for every reason."""

from __future__ import annotations

import asyncio
from pathlib import Path

from connectors.function import FunctionInfo, FunctionModel
from connectors.scripted import ScriptedModel, call
from gui_agent import create_interpreter
from gui_agent.exceptions import ModelServerError
from gui_agent.tools import tool
from schema import (
    DEFAULT_CONTINUATION_PROMPT,
    AutoChatSettings,
    AutoChatStopped,
    AutoChatStopReason,
    AutoChatTurn,
    InterpreterState,
    Message,
    ModelResponse,
    Role,
    StateChanged,
    Usage,
)
from tests.gui_agent.helpers import make, next_event, of_type


def auto(**kwargs: object) -> AutoChatSettings:
    return AutoChatSettings(enabled=True, **kwargs)


def stopped(events: list) -> AutoChatStopped:  # type: ignore[type-arg]
    found = of_type(events, "autochat_stopped")
    assert len(found) == 1, found
    assert isinstance(found[0], AutoChatStopped)
    return found[0]


async def test_runs_max_turns_then_stops_with_the_reason(tmp_path: Path) -> None:
    interpreter, model = make(
        tmp_path, [f"step {i}" for i in range(10)], autochat=auto(max_turns=3)
    )
    events = [e async for e in interpreter.chat("count for me")]
    assert [e.turn for e in events if isinstance(e, AutoChatTurn)] == [1, 2, 3]
    assert [e.remaining for e in events if isinstance(e, AutoChatTurn)] == [2, 1, 0]
    assert stopped(events).reason is AutoChatStopReason.MAX_TURNS
    assert len(of_type(events, "run_finished")) == 4  # the person's turn + 3 automatic
    # every automatic turn starts from STOP
    transitions = [(e.from_state, e.to_state) for e in events if isinstance(e, StateChanged)]
    assert transitions[1:] == [
        (InterpreterState.RUNNING, InterpreterState.STOP),
        (InterpreterState.STOP, InterpreterState.RUNNING),
    ] * 3 + [(InterpreterState.RUNNING, InterpreterState.STOP)]
    continuation = interpreter.session.history[2]
    assert continuation.role is Role.USER and continuation.metadata.get("autochat") is True
    assert isinstance(model, ScriptedModel) and len(model.requests) == 4


async def test_stops_when_the_agent_declares_the_task_complete(tmp_path: Path) -> None:
    interpreter, _ = make(
        tmp_path,
        ["working on it", call("task_complete", summary="all done"), "bye"],
        autochat=auto(max_turns=10),
    )
    events = [e async for e in interpreter.chat("do the thing")]
    end = stopped(events)
    assert end.reason is AutoChatStopReason.TASK_COMPLETE and "all done" in end.detail
    assert end.turns == 1


async def test_stops_on_the_token_budget(tmp_path: Path) -> None:
    reply = ModelResponse(text="more", usage=Usage(input_tokens=60, output_tokens=40, requests=1))
    interpreter, _ = make(tmp_path, [reply] * 10, autochat=auto(max_turns=10, token_budget=250))
    events = [e async for e in interpreter.chat("spend")]
    assert stopped(events).reason is AutoChatStopReason.TOKEN_BUDGET
    assert len(of_type(events, "run_finished")) == 3  # 100 + 100 + 100 >= 250


async def test_a_token_budget_stop_gives_its_figures_as_the_settings_show_them(
    tmp_path: Path,
) -> None:
    """`/auto` says "8,000 tokens"; the stop said "used 11025 of 8000 tokens"."""
    usage = Usage(input_tokens=9_000, output_tokens=2_025, requests=1)
    reply = ModelResponse(text="more", usage=usage)
    interpreter, _ = make(tmp_path, [reply] * 3, autochat=auto(max_turns=3, token_budget=8_000))
    events = [e async for e in interpreter.chat("spend")]
    assert stopped(events).detail == "used 11,025 of 8,000 tokens"


async def test_stops_on_the_time_budget(tmp_path: Path) -> None:
    ticks = iter(range(0, 1000, 6))  # every reading of the clock is 6 s later
    interpreter, _ = make(tmp_path, ["a", "b", "c", "d"], autochat=auto(time_budget_s=10.0))
    interpreter._auto.clock = lambda: float(next(ticks))
    events = [e async for e in interpreter.chat("go")]
    end = stopped(events)
    assert end.reason is AutoChatStopReason.TIME_BUDGET and "of 10.0s" in end.detail
    assert len(of_type(events, "run_finished")) == 2


async def test_stops_on_an_error(tmp_path: Path) -> None:
    interpreter, _ = make(
        tmp_path, ["first", ModelServerError("upstream 500")], autochat=auto(max_turns=5)
    )
    events = [e async for e in interpreter.chat("go")]
    assert stopped(events).reason is AutoChatStopReason.ERROR
    assert interpreter.state is InterpreterState.STOP


async def test_a_person_message_ends_the_run_and_becomes_the_new_goal(tmp_path: Path) -> None:
    interpreter, _ = make(
        tmp_path, ["one", "two", "three", "four"], autochat=auto(max_turns=50, delay_s=30.0)
    )
    async with interpreter.subscribe() as sub:
        await interpreter.send("start")
        await next_event(sub, lambda e: isinstance(e, AutoChatTurn))
        # AutoChat is now waiting out its delay in STOP; a message cuts in
        await interpreter.send("actually, do this instead")
        await next_event(sub, lambda e: isinstance(e, AutoChatTurn))
        await interpreter.stop()
        events = sub.pending()
    reasons = [e.reason for e in of_type(events, "autochat_stopped")]
    assert reasons[-1] is AutoChatStopReason.STOPPED
    everything = interpreter.events_since(0)
    first_stop = of_type(everything, "autochat_stopped")[0]
    assert first_stop.reason is AutoChatStopReason.USER_MESSAGE
    assert first_stop.turns == 0  # the cut-in came in the delay
    users = [m.content for m in interpreter.session.history if m.role is Role.USER]
    assert users == ["start", "actually, do this instead"]
    assert interpreter.session.history[3].content == "two"  # the cut-in was answered
    assert interpreter.session.goal == "actually, do this instead"


async def test_stop_ends_autochat(tmp_path: Path) -> None:
    interpreter, _ = make(tmp_path, ["one", "two"], autochat=auto(max_turns=50, delay_s=30.0))
    async with interpreter.subscribe() as sub:
        await interpreter.send("start")
        await next_event(sub, lambda e: isinstance(e, AutoChatTurn))
        await interpreter.stop()
        events = sub.pending()
    assert stopped(events).reason is AutoChatStopReason.STOPPED
    assert stopped(events).turns == 0  # announced, but stopped during its delay: never ran
    assert not interpreter.busy and interpreter.state is InterpreterState.STOP


async def test_switching_autochat_off_stops_after_the_current_turn(tmp_path: Path) -> None:
    gate = asyncio.Event()

    async def slow(messages: list[Message], info: FunctionInfo) -> str:
        if info.call_number == 2:
            await gate.wait()
        return f"reply {info.call_number}"

    interpreter, _ = make(tmp_path, FunctionModel(slow), autochat=auto(max_turns=50))
    async with interpreter.subscribe() as sub:
        await interpreter.send("start")
        await next_event(sub, lambda e: isinstance(e, AutoChatTurn))
        await interpreter.update(autochat=AutoChatSettings(enabled=False))
        gate.set()
        events = [e async for e in sub.until_idle()]
    assert stopped(events).reason is AutoChatStopReason.DISABLED
    assert interpreter.session.history[-1].content == "reply 2"


async def test_switching_autochat_on_when_idle_continues_at_once(tmp_path: Path) -> None:
    interpreter, _ = make(tmp_path, ["answer", "continued", "more"])
    _ = [e async for e in interpreter.chat("the goal")]
    async with interpreter.subscribe() as sub:
        await interpreter.update(autochat=auto(max_turns=1))
        events = [e async for e in sub.until_idle()]
    assert [e.turn for e in events if isinstance(e, AutoChatTurn)] == [1]
    assert stopped(events).reason is AutoChatStopReason.MAX_TURNS
    assert interpreter.session.history[-1].content == "continued"


async def test_start_autochat_runs_again_with_the_switch_left_on_and_changes_no_setting(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(tmp_path, ["answer", "one", "two"], autochat=auto(max_turns=1))
    assert await interpreter.start_autochat() is False  # no turn yet: the next message starts it
    first = [e async for e in interpreter.chat("the goal")]
    assert stopped(first).reason is AutoChatStopReason.MAX_TURNS
    assert interpreter.session.autochat.enabled  # the switch stays on after the run
    async with interpreter.subscribe() as sub:
        assert await interpreter.start_autochat() is True
        assert await interpreter.start_autochat() is False  # a run is going already
        events = [e async for e in sub.until_idle()]
    assert [e.turn for e in events if isinstance(e, AutoChatTurn)] == [1]
    assert of_type(events, "session_updated") == []  # no switching off and on again
    assert interpreter.session.history[-1].content == "two"
    assert interpreter.session.history[-2].content == DEFAULT_CONTINUATION_PROMPT


async def test_the_goal_is_re_pinned_when_it_slides_out_of_the_window(tmp_path: Path) -> None:
    interpreter, model = make(tmp_path, ["a", "b", "c"], autochat=auto(max_turns=2))
    interpreter.session.settings = interpreter.session.settings.model_copy(
        update={"memory_exchanges": 1}
    )
    events = [e async for e in interpreter.chat("THE ORIGINAL GOAL")]
    assert isinstance(model, ScriptedModel)
    last_request = model.requests[-1].messages
    pinned = [m for m in last_request if m.metadata.get("pinned_goal")]
    assert pinned and pinned[0].content.endswith("THE ORIGINAL GOAL")
    assert any(getattr(e, "goal_pinned", False) for e in of_type(events, "memory_updated"))


async def test_max_turns_setting_is_validated() -> None:
    import pytest
    from pydantic import ValidationError

    with pytest.raises(ValidationError):
        AutoChatSettings(max_turns=0)


async def test_switching_autochat_off_during_its_delay_runs_no_more_turns(
    tmp_path: Path,
) -> None:
    def model(messages: list[Message], info: FunctionInfo) -> str:
        return f"reply {info.call_number}"

    functions = FunctionModel(model)
    interpreter, _ = make(tmp_path, functions, autochat=auto(max_turns=5, delay_s=30.0))
    async with asyncio.timeout(20), interpreter.subscribe() as sub:
        await interpreter.send("Write a poem.")
        await next_event(sub, lambda e: isinstance(e, AutoChatTurn))  # the delay runs now
        off = interpreter.session.autochat.model_copy(update={"enabled": False})
        await interpreter.update(autochat=off)
        events = [e async for e in sub.until_idle()]  # at once, not after 30 s
    end = stopped(events)
    assert (end.reason, end.turns) == (AutoChatStopReason.DISABLED, 0)
    assert functions.calls == 1  # the person's turn only
    assert interpreter.session.history[-1].content == "reply 1"


async def test_a_token_budget_removed_mid_run_limits_no_more(tmp_path: Path) -> None:
    @tool
    def note(text: str) -> str:
        """Take a note."""
        return "noted"

    spent = Usage(input_tokens=60, output_tokens=40, requests=1)
    step = call("note", text="x").model_copy(update={"usage": spent})
    answer = ModelResponse(text="done for now", usage=spent)
    interpreter, _ = make(
        tmp_path,
        [step, answer] * 3,
        tools=[note],
        autochat=auto(max_turns=1, delay_s=30.0, token_budget=250),
    )
    async with asyncio.timeout(20), interpreter.subscribe() as sub:
        await interpreter.send("go")
        await next_event(sub, lambda e: isinstance(e, AutoChatTurn))  # 200 tokens so far
        unlimited = interpreter.session.autochat.model_copy(
            update={"token_budget": None, "delay_s": 0.0}
        )
        await interpreter.update(autochat=unlimited)
        interpreter._wake.set()  # the delay the turn waits in is not the point here
        events = [e async for e in sub.until_idle()]
    # The second turn spends 300 in all, over the old budget, and still runs to its answer.
    assert [e.outcome.value for e in of_type(events, "run_finished")] == ["completed"]
    assert stopped(events).reason is AutoChatStopReason.MAX_TURNS
    assert interpreter.session.history[-1].content == "done for now"


async def test_no_turn_starts_after_a_delay_that_would_end_past_the_time_budget(
    tmp_path: Path,
) -> None:
    ticks = iter(range(0, 1000, 6))  # every reading of the clock is 6 s later
    interpreter, model = make(
        tmp_path, ["a", "b"], autochat=auto(time_budget_s=100.0, delay_s=3600.0)
    )
    interpreter._auto.clock = lambda: float(next(ticks))
    async with asyncio.timeout(20):  # not after the hour's delay
        events = [e async for e in interpreter.chat("go")]
    end = stopped(events)
    assert end.reason is AutoChatStopReason.TIME_BUDGET and end.turns == 0
    assert "past the budget" in end.detail
    assert of_type(events, "autochat_turn") == []  # no turn announced that will never run
    assert isinstance(model, ScriptedModel) and model.remaining == 1


async def test_a_continuation_prompt_edited_mid_run_is_used_and_a_blank_one_is_not_sent(
    tmp_path: Path,
) -> None:
    def model(messages: list[Message], info: FunctionInfo) -> str:
        return f"reply {info.call_number}"

    functions = FunctionModel(model)
    interpreter, _ = make(tmp_path, functions, autochat=auto(max_turns=2, delay_s=30.0))
    async with asyncio.timeout(20), interpreter.subscribe() as sub:
        await interpreter.send("Write a poem.")
        for prompt in ("Now make it rhyme.", "   "):
            await next_event(sub, lambda e: isinstance(e, AutoChatTurn))  # its delay runs
            edited = interpreter.session.autochat.model_copy(update={"continuation_prompt": prompt})
            await interpreter.update(autochat=edited)
            interpreter._wake.set()  # end the delay: it is not the point here
        await interpreter.wait_idle()
    prompts = [m.content for m in interpreter.session.history if m.metadata.get("autochat")]
    assert prompts == ["Now make it rhyme.", DEFAULT_CONTINUATION_PROMPT]


async def test_an_agent_with_only_its_own_tools_can_still_declare_the_task_complete(
    tmp_path: Path,
) -> None:
    """Without the built-in tools, `task_complete` was missing too: AutoChat's prompt asks
    for it, the model's call was refused as an unknown tool, and every turn was used up."""

    @tool
    def measure(what: str) -> str:
        """Measure something."""
        return f"{what}: 3 m"

    model = ScriptedModel(
        [call("measure", what="the wall"), call("task_complete", summary="measured"), "Done."],
        default="still working",
    )
    interpreter = create_interpreter(
        model, tools=[measure], builtin_tools=False, workdir=tmp_path, autochat=auto(max_turns=3)
    )
    events = [e async for e in interpreter.chat("measure the wall")]
    assert stopped(events).reason is AutoChatStopReason.TASK_COMPLETE
    assert [s.name for s in model.requests[0].tools] == ["measure", "task_complete"]
    assert not of_type(events, "autochat_turn")  # done within the person's own turn
