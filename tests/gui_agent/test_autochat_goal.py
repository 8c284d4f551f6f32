"""AutoChat's goal: which message it is, and that a goal shown in images stays in view."""

from __future__ import annotations

import asyncio
from pathlib import Path

from connectors.scripted import ScriptedModel, call
from gui_agent import chat_sync, create_interpreter
from gui_agent.memory import SlidingWindowMemory
from gui_agent.tools import tool
from gui_agent.wording import autochat_stop_words
from schema import (
    AutoChatSettings,
    AutoChatStopped,
    AutoChatStopReason,
    ImagePart,
    InterpreterState,
    Message,
    Role,
    RunFinished,
    RunOutcome,
)
from tests.gui_agent.helpers import make, of_type

PNG = ImagePart(media_type="image/png", data="iVBORw0KGgo=")


def auto(**kwargs: object) -> AutoChatSettings:
    return AutoChatSettings(enabled=True, **kwargs)


async def test_an_image_only_goal_is_re_pinned_with_its_images(tmp_path: Path) -> None:
    interpreter, model = make(tmp_path, ["a", "b", "c"], autochat=auto(max_turns=2))
    interpreter.session.settings = interpreter.session.settings.model_copy(
        update={"memory_exchanges": 1}
    )
    async with interpreter.subscribe() as sub:
        await interpreter.send("", images=[PNG])
        events = [e async for e in sub.until_idle()]
    assert isinstance(model, ScriptedModel) and len(model.requests) == 3
    last_request = model.requests[-1].messages
    pinned = [m for m in last_request if m.metadata.get("pinned_goal")]
    assert len(pinned) == 1 and pinned[0].images == (PNG,)
    assert pinned[0].role is Role.USER
    memory = of_type(events, "memory_updated")[-1]
    assert memory.goal_pinned and memory.goal == "(the attached images)"


async def test_a_goal_with_text_and_images_is_pinned_with_both(tmp_path: Path) -> None:
    interpreter, model = make(tmp_path, ["a", "b", "c"], autochat=auto(max_turns=2))
    interpreter.session.settings = interpreter.session.settings.model_copy(
        update={"memory_exchanges": 1}
    )
    async with interpreter.subscribe() as sub:
        await interpreter.send("make a page like this sketch", images=[PNG])
        _ = [e async for e in sub.until_idle()]
    assert isinstance(model, ScriptedModel)
    first, last = model.requests[0].messages, model.requests[-1].messages
    assert not [m for m in first if m.metadata.get("pinned_goal")]  # still in the window
    pinned = [m for m in last if m.metadata.get("pinned_goal")]
    assert [(m.content, m.images) for m in pinned] == [("make a page like this sketch", (PNG,))]


def test_the_memory_counts_a_goal_message_in_the_window_by_its_id() -> None:
    memory = SlidingWindowMemory(exchanges=1)
    goal = Message(role=Role.USER, content="", images=(PNG,))
    other = Message(role=Role.USER, content="", images=(PNG,))  # same look, not the goal
    history = [goal, Message(role=Role.ASSISTANT, content="ok")]
    window = memory.window(history, goal=goal)
    assert not window.goal_pinned and window.message_ids == tuple(m.id for m in history)
    later = [*history, other, Message(role=Role.ASSISTANT, content="and?")]
    window = memory.window(later, goal=goal)
    assert window.goal_pinned and window.messages[0].images == (PNG,)
    assert window.message_ids == (other.id, later[-1].id)
    # extending the last window: a reply appended keeps the pin and adds the reply
    longer = [*later, Message(role=Role.ASSISTANT, content="more")]
    extended = memory.window(longer, goal=goal)
    assert extended.goal_pinned and extended.message_ids[-1] == longer[-1].id
    assert extended.messages[0].images == (PNG,)


async def test_autochat_switched_on_later_works_toward_the_latest_message(
    tmp_path: Path,
) -> None:
    interpreter, _ = make(tmp_path, ["poem", "done", "summary", "continued", "more"])
    await interpreter.update(autochat=auto(max_turns=1))
    _ = [e async for e in interpreter.chat("write a poem")]
    await interpreter.update(autochat=AutoChatSettings(enabled=False))
    _ = [e async for e in interpreter.chat("now summarize notes.txt")]
    async with interpreter.subscribe() as sub:
        await interpreter.update(autochat=auto(max_turns=1))
        _ = [e async for e in sub.until_idle()]
    assert interpreter.session.goal == "now summarize notes.txt"
    assert interpreter.window().goal == "now summarize notes.txt"


def test_chat_sync_twice_with_autochat_delays(tmp_path: Path) -> None:
    """Each chat_sync runs its own event loop; AutoChat's wake-up must not stay bound to
    the first one."""
    model = ScriptedModel(["one", "two", "three", "four"])
    interpreter = create_interpreter(
        model,
        builtin_tools=False,
        workdir=tmp_path,
        autochat=auto(max_turns=1, delay_s=0.01),
    )
    first = chat_sync(interpreter, "first")
    second = chat_sync(interpreter, "second")
    for events in (first, second):
        assert not of_type(events, "error"), of_type(events, "error")
        assert len(of_type(events, "run_finished")) == 2  # the person's turn + 1 automatic
    assert [m.content for m in interpreter.session.history if m.role is Role.ASSISTANT] == [
        "one",
        "two",
        "three",
        "four",
    ]


async def test_the_time_budget_stops_an_automatic_turn_that_runs_past_it(
    tmp_path: Path,
) -> None:
    """A tool that hangs in an automatic turn: the budget stops the turn where it ends,
    not when the tool's own timeout (60 s) finally answers."""
    started = asyncio.Event()

    @tool
    async def wait_for_ever() -> str:
        """Wait."""
        started.set()
        await asyncio.sleep(3600)
        return "never"

    interpreter, _ = make(
        tmp_path,
        ["first answer", call("wait_for_ever"), "never reached"],
        tools=[wait_for_ever],
        autochat=auto(max_turns=3, time_budget_s=0.3),
    )
    interpreter._auto.clock = lambda: 0.0  # the person's turn takes no budget, whatever it takes
    events = [e async for e in interpreter.chat("keep going")]
    assert started.is_set()
    end = [e for e in events if isinstance(e, AutoChatStopped)]
    assert len(end) == 1 and end[0].reason is AutoChatStopReason.TIME_BUDGET
    assert end[0].detail == "0.3s, during an automatic turn, which was stopped"
    # said once, not twice ("its time budget ran out (the time budget of 0.3s ran out …)")
    said = autochat_stop_words(end[0].reason, end[0].detail)
    assert said == "its time budget ran out (0.3s, during an automatic turn, which was stopped)"
    outcomes = [e.outcome for e in events if isinstance(e, RunFinished)]
    assert outcomes == [RunOutcome.COMPLETED, RunOutcome.INTERRUPTED]
    assert interpreter.state is InterpreterState.STOP and not interpreter.busy
    result = interpreter.session.history[-1]
    assert result.role is Role.TOOL and "interrupted" in result.content.lower()
    # the session goes on
    await interpreter.update(autochat=AutoChatSettings(enabled=False))
    _ = [e async for e in interpreter.chat("thanks")]
    assert interpreter.session.history[-1].content == "never reached"
