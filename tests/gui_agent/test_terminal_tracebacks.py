"""`gui-agent --log-level DEBUG chat` in a real pseudo-terminal: a failing agent's traceback.

At DEBUG the person asked to see what went wrong: the traceback is written whole, on its
own rows above the line being typed, as in a log file. It was escaped onto the record's one
line (literal \\n between the frames), unreadable where it was asked for.
"""

from __future__ import annotations

from pathlib import Path

from tests.gui_agent.test_terminal_logging import failing_agent_in_a_terminal, whole_traceback


def test_at_debug_a_terminal_shows_a_failing_agents_traceback_whole(tmp_path: Path) -> None:
    seen = failing_agent_in_a_terminal(tmp_path, "--log-level", "DEBUG")
    whole_traceback(seen.replace("\r\n", "\n"))  # (the terminal ends its rows with CR LF)
    assert "! agent_failed: RuntimeError: bot exploded" in seen
    assert "(--log-level DEBUG shows the traceback)" not in seen
