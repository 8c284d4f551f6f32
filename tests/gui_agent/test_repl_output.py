"""How the terminal chat shows a tool's long output: the start, and how much it left out
(the model and the history get the whole of it, within the tool's output cap)."""

from __future__ import annotations

from pathlib import Path

from connectors.scripted import call
from gui_agent.repl_display import SHOWN_OUTPUT_CHARS, EventLines, format_event
from schema import (
    Event,
    Message,
    MessageCompleted,
    MessageType,
    PermissionMode,
    Role,
    ToolCallOutput,
)
from tests.gui_agent.helpers import make, running_code


def console_of(events: list[Event]) -> Message:
    """The one tool output the turn filed."""
    [console] = [
        e.message
        for e in events
        if isinstance(e, MessageCompleted) and e.message.type is MessageType.CONSOLE
    ]
    return console


async def test_long_output_is_cut_in_the_terminal_saying_how_much_was_left_out(
    tmp_path: Path,
) -> None:
    code = "for i in range(5000):\n    print(i)"
    interpreter = running_code(tmp_path, code, "Counted.")
    events = [e async for e in interpreter.chat("count to 5000")]
    console = console_of(events)
    assert "4999" in console.content  # all of it is kept
    shown = format_event(MessageCompleted(message=console))
    assert shown is not None
    start = console.content[:SHOWN_OUTPUT_CHARS]
    rest = console.content[SHOWN_OUTPUT_CHARS:]
    left = len(rest)
    lines = rest.count("\n") + (not rest.endswith("\n"))
    assert shown.endswith(f"…\n  ┆ [{left:,} more characters ({lines:,} lines) not shown here]")
    assert "\n  ┆ 0\n" in shown and "4999" not in shown
    assert start.splitlines()[-1] in shown


async def test_short_output_is_shown_whole(tmp_path: Path) -> None:
    interpreter, _ = make(
        tmp_path,
        [call("run_python", code="print('hi')"), "Said hi."],
        permissions={"run_python": PermissionMode.ALLOW},
    )
    events = [e async for e in interpreter.chat("say hi")]
    console = console_of(events)
    shown = format_event(MessageCompleted(message=console))
    assert shown is not None and "not shown here" not in shown
    assert [line.removeprefix("  ┆ ") for line in shown.splitlines()[2:]] == (
        console.content.splitlines()
    )


async def test_a_note_written_whole_is_shown_with_its_speaker(tmp_path: Path) -> None:
    """The step limit's note is never streamed: only its completion can show it (the
    terminal showed nothing but the outcome line)."""
    interpreter, _ = make(
        tmp_path,
        [call("run_python", code="print(1)")] * 2,
        permissions={"run_python": PermissionMode.ALLOW},
    )
    settings = interpreter.session.settings.model_copy(update={"max_iterations": 1})
    await interpreter.update(settings=settings)
    events = [e async for e in interpreter.chat("loop")]
    shown = "".join(text for e in events if (text := format_event(e)))
    assert (
        "\n[Executor] I stopped after 1 step (the maximum for one turn) without a final "
        "answer. Say 'continue' to let me go on."
    ) in shown
    assert "(max_iterations: stopped after 1 model call)" in shown


async def test_output_shown_as_it_came_is_not_shown_again_when_the_call_ends(
    tmp_path: Path,
) -> None:
    code = "import time\nprint('tick 0', flush=True)\ntime.sleep(0.5)\nprint('tick 1')"
    interpreter = running_code(tmp_path, code, "Ticked.")
    lines = EventLines()
    shown = "".join(
        text for e in [e async for e in interpreter.chat("tick")] if (text := lines.format(e))
    )
    assert "\n  ┆ console:\n  ┆ tick 0\n  ┆ tick 1\n" in shown, shown
    assert shown.count("┆ tick 0") == 1  # the result only says how the code ended
    assert shown.split("┆ tick 1\n")[1].startswith("  ✓ run_python (")  # no blank line
    assert shown.count("\n  ┆ exit code 0\n") == 1


def test_live_output_in_parts_keeps_one_mark_per_line_and_says_what_was_left_out() -> None:
    lines = EventLines()
    parts = [
        lines.format(ToolCallOutput(call_id="c", text="half a li")),
        lines.format(ToolCallOutput(call_id="c", text="ne\nnext\n")),
        lines.format(ToolCallOutput(call_id="c", text="last\n", omitted=1200)),
    ]
    assert "".join(p or "" for p in parts) == (
        "\n  ┆ console:\n  ┆ half a line\n  ┆ next\n  ┆ …[1,200 characters not shown]…\n  ┆ last\n"
    )


def test_a_tool_without_an_exit_status_still_shows_its_result_after_its_progress() -> None:
    lines = EventLines()
    lines.format(ToolCallOutput(call_id="c", text="page 1 read\n"))
    result = Message(role=Role.TOOL, tool_call_id="c", name="crawl", content="3 pages")
    shown = lines.format(MessageCompleted(message=result))
    assert shown is not None and "3 pages" in shown


async def test_output_shown_as_it_came_is_not_repeated_when_a_stop_ends_the_call(
    tmp_path: Path,
) -> None:
    code = "import time\nprint('tick 0', flush=True)\ntime.sleep(60)"
    interpreter = running_code(tmp_path, code, "never")
    lines = EventLines()
    shown: list[str] = []
    async with interpreter.subscribe() as events:
        await interpreter.send("tick and wait")
        async for event in events.until_idle():
            if text := lines.format(event):
                shown.append(text)
            if isinstance(event, ToolCallOutput):
                await interpreter.stop()
    said = "".join(shown)
    assert said.count("┆ tick 0") == 1, said  # shown as it came, not again in the answer
    assert "┆ Interrupted while running: the turn ended (stopped by the user)." in said
