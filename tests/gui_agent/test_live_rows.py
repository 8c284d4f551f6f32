"""A running call's output in the terminal chat (`live_rows`): a row drawn again after `\\r`
(a progress bar) shows its latest drawing on a row of its own, at most every few seconds,
and its last drawing when it ends or the call does. Before, the terminal, which shows no
control character a tool prints, ran the frames together on one growing row."""

from __future__ import annotations

from pathlib import Path

from gui_agent.live_rows import REDRAW_EVERY_S, OutputRows
from gui_agent.repl_display import EventLines
from schema import Message, MessageCompleted, Role, ToolCallOutput
from tests.connectors.peers import FakeClock
from tests.gui_agent.helpers import running_code

MARK = "| "


def test_plain_rows_show_as_they_come_one_mark_each() -> None:
    rows = OutputRows(MARK, clock=FakeClock())
    said = [rows.show("half a li"), rows.show("ne\n\nnext\r\n"), rows.show("open")]
    assert said == ["| half a li", "ne\n| \n| next\n", "| open"]
    assert not rows.ended


def test_a_bar_shows_a_drawing_every_few_seconds_and_where_it_ended() -> None:
    clock = FakeClock()
    rows = OutputRows(MARK, clock=clock)
    shown = [rows.show("downloading\n"), rows.show("  0%")]
    for percent in range(10, 100, 10):  # nine frames in well under the interval
        clock.now += 0.1
        shown.append(rows.show(f"\r {percent}%"))
    clock.now += REDRAW_EVERY_S  # a frame after a quiet spell shows
    shown.append(rows.show("\r 95%"))
    clock.now += 0.1
    shown.append(rows.show("\r100%\n"))
    assert "".join(shown) == "| downloading\n|   0%\n|  95%\n| 100%\n"
    assert rows.ended


def test_the_first_drawing_again_shows_at_once_and_a_repeat_is_not_shown_twice() -> None:
    clock = FakeClock()
    rows = OutputRows(MARK, clock=clock)
    assert rows.show("\rstep 1") == "| step 1"  # (nothing before it on its row)
    clock.now += REDRAW_EVERY_S
    assert rows.show("\rstep 1") == ""  # the same drawing: nothing new to show
    assert rows.show("\rstep 2\r") == "\n| step 2"
    assert rows.show("\n") == "\n"  # (a bare \\r before the line's end erases nothing)


def test_a_drawing_not_shown_yet_is_shown_when_the_call_ends() -> None:
    clock = FakeClock()
    lines = EventLines(clock=clock)
    started = lines.format(ToolCallOutput(call_id="c", text="10%"))
    clock.now += 0.5
    again = lines.format(ToolCallOutput(call_id="c", text="\r60%"))
    end = Message(role=Role.TOOL, tool_call_id="c", content="…", metadata={"status": "exit code 0"})
    ended = lines.format(MessageCompleted(message=end))
    assert (started, again) == ("\n  ┆ console:\n  ┆ 10%", "")
    assert ended == "\n  ┆ 60%\n  ┆ exit code 0"


def test_what_was_left_out_is_said_on_a_row_of_its_own() -> None:
    lines = EventLines(clock=FakeClock())
    lines.format(ToolCallOutput(call_id="c", text="half a li"))
    said = lines.format(ToolCallOutput(call_id="c", text="last\n", omitted=1200))
    assert said == "\n  ┆ …[1,200 characters not shown]…\n  ┆ last\n"


async def test_a_progress_bar_from_real_code_ends_on_its_last_drawing(tmp_path: Path) -> None:
    code = (
        "import sys, time\n"
        "for n in range(0, 101, 20):\n"
        "    sys.stdout.write(f'\\rloading {n}%'); sys.stdout.flush(); time.sleep(0.05)\n"
        "print()\n"
        "print('loaded')\n"
    )
    interpreter = running_code(tmp_path, code, "Loaded.")
    lines = EventLines()
    said = []
    async for event in interpreter.chat("load"):  # (shown as it comes, as the chat does)
        if text := lines.format(event):
            said.append(text)
    shown = "".join(said)
    assert "┆ loading 100%\n  ┆ loaded\n" in shown, shown
    assert "%loading" not in shown  # (the frames ran together: "loading 0%loading 20%…")
    assert shown.count("loading") <= 3, shown  # the first drawing, the last, at most one between
