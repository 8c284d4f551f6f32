"""The chat's reading thread reads a descriptor of its own, never a number reused.

Its owner may close standard input while the thread waits on it (the tests do; an
embedding program may). The number is then free, and the next file opened takes it: a
thread still reading by number read that file's bytes (a model's weights, a socket's).
"""

from __future__ import annotations

import asyncio
import os
import sys

import pytest

from gui_agent.cli import LineReader, ReadEnd


def test_standard_input_closed_under_the_reader_leaves_the_next_file_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    typed, typing = os.pipe()

    async def read() -> tuple[list[str | ReadEnd], bytes]:
        with open(typed, encoding="utf-8") as stdin:
            monkeypatch.setattr(sys, "stdin", stdin)
            reader = LineReader(asyncio.get_running_loop())
        # standard input is closed; the pipe opened next takes its number
        other_out, other_in = os.pipe()
        try:
            assert other_out == typed  # (the lowest free number: else this shows nothing)
            os.write(other_in, b"not for the chat\n")
            os.write(typing, b"mine\n")
            os.close(typing)
            lines = [await reader.readline(""), await reader.readline("")]
            await asyncio.sleep(0.05)  # a thread reading by number would take it meanwhile
            os.set_blocking(other_out, False)
            try:
                return lines, os.read(other_out, 100)
            except BlockingIOError:  # taken
                return lines, b""
        finally:
            os.close(other_out)
            os.close(other_in)

    lines, left = asyncio.run(read())
    assert lines == ["mine", ReadEnd.EOF]
    assert left == b"not for the chat\n"
