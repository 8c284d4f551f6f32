"""A program reading `Interpreter.chat()` that stops taking events is told, not left with a
stream that ends as if the turn were over."""

from __future__ import annotations

from pathlib import Path

import pytest

from gui_agent import FellBehind
from gui_agent.events import MAX_BEHIND
from schema import Role
from tests.gui_agent.helpers import make


async def test_a_chat_reader_that_stops_reading_is_told_it_fell_behind(tmp_path: Path) -> None:
    words = MAX_BEHIND + 1_000
    reply = " ".join(f"w{i}" for i in range(words))
    interpreter, _ = make(tmp_path, [reply], delay_s=1e-6)  # the loop turns between words
    seen = 0
    with pytest.raises(FellBehind, match="stopped reading"):
        async for _ in interpreter.chat("talk a lot"):
            seen += 1
            if seen == 1:
                await interpreter.wait_idle()  # the reader is busy while the whole turn runs
    assert seen < words
    [answer] = [m for m in interpreter.session.history if m.role is Role.ASSISTANT]
    assert answer.content.split()[-1] == f"w{words - 1}"  # the turn went on to its end


async def test_a_reader_that_keeps_up_with_a_long_reply_gets_every_event(tmp_path: Path) -> None:
    words = MAX_BEHIND + 1_000
    interpreter, _ = make(tmp_path, [" ".join(f"w{i}" for i in range(words))], delay_s=1e-6)
    deltas = [e async for e in interpreter.chat("talk a lot") if e.type == "text_delta"]
    assert "".join(d.delta for d in deltas).split()[-1] == f"w{words - 1}"
