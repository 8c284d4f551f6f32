"""Output written for a terminal is shown and kept as the text a terminal would show: no
colour codes, titles or cursor moves as `␛[31m` litter on the page, in the history or in what
the model reads, and a progress bar redrawn with `\\r` as its last drawing, not one line per
frame. (Before, code that coloured its output showed `[31m` around every word.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

from connectors.scripted import call
from gui_agent.live_output import INTERVAL_S, LiveOutput
from gui_agent.terminal_text import (
    MAX_HELD,
    overwritten,
    split_escapes,
    terminal_view,
    without_escapes,
)
from gui_agent.tools import ToolContext, tool
from schema import Event, ToolCallOutput
from tests.gui_agent.helpers import make, running_code

COLOURED = (
    "\x1b[1;31mred\x1b[0m and \x1b[38;5;82mgreen\x1b[m"  # colours (SGR)
    "\x1b]0;a window title\x07"  # a title, ended by BEL
    "\x1b]8;;https://example.org\x1b\\a link\x1b]8;;\x1b\\"  # a hyperlink, ended by ST
    "\x1b[2K\x1b[1A\x1b(B\x1b=\x9b1m"  # erase, cursor up, a character set, keypad, C1 CSI
    " end"
)
PLAIN = "red and greena link end"


def test_escape_sequences_go_and_the_words_they_wrapped_stay() -> None:
    assert without_escapes(COLOURED) == PLAIN
    assert without_escapes("a lone \x1b\nescape") == "a lone \nescape"
    assert without_escapes("no escapes, ü ✓") == "no escapes, ü ✓"
    assert without_escapes("cut off mid-sequence\x1b[3") == "cut off mid-sequence"


def test_a_sequence_cut_between_two_pieces_is_held_until_its_rest_comes() -> None:
    for size in (1, 2, 3, 5, 7):
        pieces = [COLOURED[i : i + size] for i in range(0, len(COLOURED), size)]
        shown, held = [], ""
        for piece in pieces:
            ready, held = split_escapes(held + piece)
            assert "\x1b" not in ready and "\x9b" not in ready, (size, ready)
            shown.append(ready)
        assert "".join(shown) == PLAIN and held == "", size


def test_an_escape_that_never_ends_is_not_held_forever() -> None:
    ready, held = split_escapes("\x1b]0;" + "t" * (MAX_HELD + 10))
    assert held == "" and ready.endswith("t" * (MAX_HELD + 10))
    assert split_escapes("done \x1b[") == ("done ", "\x1b[")


def test_a_line_drawn_again_after_a_carriage_return_shows_its_last_drawing() -> None:
    assert overwritten("10%\r50%\r100%\ndone\n") == "100%\ndone\n"
    assert overwritten("a\r\nb\r\n") == "a\nb\n"  # CRLF line endings stay line endings
    assert terminal_view("\x1b[32m 10%\x1b[0m\r\x1b[32m100%\x1b[0m\n") == "100%\n"


async def test_live_output_carries_no_escapes_even_when_a_sequence_is_cut() -> None:
    published: list[Event] = []
    live = LiveOutput(published.append, {"a"}.__contains__)
    live.feed("a", "tick \x1b[3")
    live.flush()  # the sequence's rest is still to come: only "tick " goes
    live.feed("a", "1mred\x1b[0m\n")
    await asyncio.sleep(INTERVAL_S * 1.5)
    live.feed("a", "\x1b[")  # cut, and the call finishes: nothing but words is sent
    live.finish("a")
    texts = [e.text for e in published if isinstance(e, ToolCallOutput)]
    assert texts == ["tick ", "red\n"]


async def test_a_tool_of_your_own_that_shows_colours_shows_words(tmp_path: Path) -> None:
    @tool
    async def build(ctx: ToolContext) -> str:
        """Build the project."""
        ctx.show("\x1b[32mok\x1b[0m compiled\n")
        await asyncio.sleep(0)
        return "built"

    interpreter, _ = make(tmp_path, [call("build"), "after"], tools=[build])
    events = [e async for e in interpreter.chat("build")]
    assert [e.text for e in events if isinstance(e, ToolCallOutput)] == ["ok compiled\n"]


PROGRESS = r"""
import os, sys, time
print(os.environ.get("NO_COLOR"), os.environ.get("TERM"))
for i in range(0, 101, 10):
    sys.stdout.write(f"\r\x1b[32mdownloading {i:3d}%\x1b[0m")
    sys.stdout.flush()
    time.sleep(0.03)
print()
print("\x1b]0;title\x07\x1b[1mdone\x1b[0m")
"""


async def test_run_python_gives_the_model_what_the_terminal_showed(tmp_path: Path) -> None:
    interpreter = running_code(tmp_path, PROGRESS, "after")
    events = [e async for e in interpreter.chat("download")]
    result = interpreter.session.history[-2]
    # asked for no colours; the progress bar's last drawing; the words without their codes
    assert result.content.startswith("1 dumb\ndownloading 100%\ndone\n"), result.content
    assert "\x1b" not in result.content and "downloading  10%" not in result.content
    live = "".join(e.text for e in events if isinstance(e, ToolCallOutput))
    assert "\x1b" not in live and live.endswith("downloading 100%\ndone\n"), live
    # what the model was sent is the same text
    sent = interpreter.deps.provider.requests[-1].messages[-1]  # type: ignore[attr-defined]
    assert sent.content == result.content
