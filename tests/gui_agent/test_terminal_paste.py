"""`gui-agent chat` in a real pseudo-terminal: a very long line pasted at the prompt.

The paste reaches the chat a few kB at a time. Each piece used to be drawn with the whole
line again, so the chat wrote (and measured) the line over and over: a 200,000-character
paste took over a minute to answer, and Ctrl-C waited as long. What the chat writes while it
takes a paste is the paste, once: that is checked here, not how long it takes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from gui_agent.repl_input import ChatInput
from tests.gui_agent.test_terminal_keys import CLI, CTRL_C, LEAVE_HINT, Terminal

WRITTEN_AT_MOST = 2
"""How many times its length the chat may write while it takes a paste (it wrote hundreds)."""


def echo_chat(tmp_path: Path) -> Terminal:
    argv = [CLI, "chat", "--model", "scripted:echo", "--no-probe", "--workdir", str(tmp_path)]
    return Terminal(argv, tmp_path)


def test_a_pasted_line_over_the_limit_is_written_once_and_refused(tmp_path: Path) -> None:
    terminal = echo_chat(tmp_path)
    terminal.read_until(b"you> ")
    length = 250_000
    terminal.type(b"x" * length + b"\n")
    taken = terminal.read_until(b"the limit is 200,000")
    assert f"the message has {length:,} characters".encode() in taken  # none was lost
    assert len(taken) < WRITTEN_AT_MOST * length
    terminal.read_until(b"you> ")
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0


def test_ctrl_c_during_a_long_paste_drops_the_line_and_the_chat_goes_on(tmp_path: Path) -> None:
    terminal = echo_chat(tmp_path)
    terminal.read_until(b"you> ")
    length = 300_000
    terminal.type(b"y" * length)
    terminal.type(CTRL_C)
    dropped = terminal.read_until(b"^C")
    assert len(dropped) < WRITTEN_AT_MOST * length
    terminal.read_until(LEAVE_HINT)  # at the prompt: the line is gone, the chat says how to leave
    terminal.read_until(b"you> ")
    terminal.type(b"still here\n")
    answered = terminal.read_until(b"(completed)")
    assert b"still here" in answered and b"yyy" not in answered
    terminal.read_until(b"you> ")
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0


async def test_pieces_read_while_the_loop_is_busy_are_edited_and_drawn_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each piece the reading thread got was handed to the loop on its own, to be edited and
    drawn; a Ctrl-C waited behind all of them. Now the loop takes, at once, all that came
    while it was busy: a paste costs a few drawings, and a Ctrl-C waits for one at most."""
    reader = ChatInput(asyncio.get_running_loop(), {"TERM": "dumb"})
    taken: list[str] = []
    arrived = asyncio.Event()

    def typed(text: str) -> None:
        taken.append(text)
        arrived.set()

    monkeypatch.setattr(reader, "_typed", typed)
    try:
        for piece in ("first ", "second ", "third"):  # as the thread does, the loop busy
            reader._arrived(piece)
        await arrived.wait()
        assert taken == ["first second third"]
        arrived.clear()
        reader._arrived("\n")
        await arrived.wait()
        assert taken == ["first second third", "\n"]  # (in order, nothing lost)
    finally:
        reader.close()
