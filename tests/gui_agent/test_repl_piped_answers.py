"""`gui-agent chat` fed from a pipe, at an approval question: nobody sees the line taken.

A script's lines are its messages, and its answers where it meant to answer: a line read at
a question is shown after it, with what it decided (`… [N]o: y → allowed once`). A line that
is none of the answers (y/yes, s/session, n/no, any case, or empty for the default No) is
the message the script meant to send next: the call is denied, the transcript says so, and
the line is sent once the turn has ended. It was taken as a silent No, and never sent.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.gui_agent.test_repl_errors import env, workspace
from tests.gui_agent.test_terminal_keys import CLI

ASKING_AGENT = """
async def agent(messages):
    said = messages[-1]["content"] if messages else ""
    yield {"role": "assistant", "type": "message", "content": f"you said: {said}"}
    if "code" in said:
        yield {"role": "assistant", "type": "code", "format": "python", "content": "print(6 * 7)"}
        yield {"role": "computer", "type": "confirmation", "format": "execution",
               "content": {"type": "code", "format": "python", "content": "print(6 * 7)"}}
        yield {"role": "computer", "type": "console", "format": "output", "content": "42\\n"}
"""
"""An agent of your own (`--agent`) that repeats the message and, asked for code, has code
run: the chat asks before it runs."""

QUESTION = "allow? [y]es once / [s] for this chat / [N]o: "


def piped_chat(tmp_path: Path, typed: str) -> str:
    """`gui-agent chat --agent bot.py:agent` with `typed` piped in: what it printed."""
    (tmp_path / "bot.py").write_text(ASKING_AGENT)
    argv = [CLI, "chat", "--agent", "bot.py:agent", "--model", "scripted:echo", "--no-probe"]
    result = subprocess.run(
        [*argv, "--workdir", str(workspace(tmp_path))],
        input=typed,
        capture_output=True,
        text=True,
        env=env(tmp_path),
        cwd=tmp_path,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


def test_from_a_pipe_a_line_that_is_no_answer_denies_and_is_sent_as_the_next_message(
    tmp_path: Path,
) -> None:
    out = piped_chat(tmp_path, "hello bot\nrun code now\nplease fail\n")
    assert (
        f"{QUESTION}please fail → denied: not y, s or n, so this line is kept as your "
        "next message\n  approval: deny (user)"
    ) in out
    assert "[Other] 42" not in out  # the code did not run
    after = out[out.index("approval: deny (user)") :]
    assert "\nyou> \n[Other] you said: please fail" in after  # sent once the turn ended
    assert out.count("you said: ") == 3


def test_from_a_pipe_each_answer_is_shown_with_what_it_decided(tmp_path: Path) -> None:
    typed = "run code now\nYes\nrun code again\n\nrun code once more\n session \nthanks\n"
    out = piped_chat(tmp_path, typed)
    assert f"{QUESTION}Yes → allowed once\n  approval: allow_once (user)" in out
    assert f"{QUESTION}(empty line) → denied\n  approval: deny (user)" in out
    assert f"{QUESTION}session → allowed for this chat\n  approval: allow_session" in out
    assert out.count("[Other] 42") == 2  # allowed twice, denied once
    assert "you said: thanks" in out  # every line that was no answer was a message
    assert out.count("you said: ") == 4
