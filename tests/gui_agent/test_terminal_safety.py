"""`gui-agent chat` asks before a tool changes anything: the answer must be the person's, to
the question as it really is.

Only a whole `y`/`yes` or `s`/`session` allows; a line typed while a reply streamed, before
the question was shown, is a message, not the answer; and no text from the model, a tool or
a file can drive the terminal (move the cursor, erase a line, reorder characters) to hide
what is being approved.
"""

from __future__ import annotations

from pathlib import Path

from tests.gui_agent.screen import Screen
from tests.gui_agent.test_repl_errors import WRITE_A_FILE, chat_argv, workspace
from tests.gui_agent.test_terminal_io import run
from tests.gui_agent.test_terminal_keys import Terminal
from tests.gui_agent.test_terminal_live import live_chat


def test_an_answer_that_only_starts_like_yes_or_session_denies(tmp_path: Path) -> None:
    """Typed on a terminal, after seeing the question. (From a pipe such a line is taken
    for the script's next message: `test_repl_piped_answers`.)"""
    folder = workspace(tmp_path)
    second = {"tool": "write_file", "args": {"path": "b.txt", "content": "hi"}}
    replies = [WRITE_A_FILE, "first done", second, "second done", WRITE_A_FILE, "third done"]
    terminal = Terminal(chat_argv(replies, folder), tmp_path)
    for message, answer in (("write a", "stop"), ("write b", "sure"), ("write a again", "yes")):
        terminal.read_until(b"you> ")
        terminal.type(message.encode() + b"\n")
        terminal.read_until(b"allow? [y]es once / [s] for this chat / [N]o: ")
        terminal.type(answer.encode() + b"\n")
    terminal.read_until(b"you> ")
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0
    screen = Screen(200, 500)  # (what was drawn again counts once: the rows shown)
    screen.feed(terminal.seen.decode())
    out = "\n".join(screen.rows)
    # "stop" did not allow writing for the whole session: the next write was asked again
    assert out.count("allow? [y]es once") == 3
    assert out.count("approval: deny (user)") == 2
    assert out.count("approval: allow_once (user)") == 1
    assert "allow_session" not in out
    assert not (folder / "b.txt").exists()
    assert (folder / "a.txt").read_text() == "hi"


def test_a_line_typed_while_the_reply_streams_does_not_answer_the_question_after_it(
    tmp_path: Path,
) -> None:
    thinking = {"say": "thinking", "wait": True, "tool": {"path": "a.txt", "content": "hi"}}
    terminal = live_chat(tmp_path, [thinking, {}])  # asks only once the next line is typed
    terminal.read_until(b"you> ")
    terminal.type(b"write a file\n")
    terminal.read_until(b"thinking")
    terminal.type(b"yes, and then tell me more\n")  # meant as a message: sent at once
    assert b"(sent: the agent reads it next)" in terminal.read_until(b"Write file a.txt")
    terminal.read_until(b"allow? [y]es once / [s] for this chat / [N]o: ")
    terminal.type(b"n\n")  # the answer, typed after seeing the question
    answered = terminal.read_until(b"you said: yes, and then tell me more")  # the agent read it
    assert b"approval: deny (user)" in answered
    terminal.read_until(b"you> ")
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0
    assert not (tmp_path / "work" / "a.txt").exists()


def test_text_from_the_model_and_tools_cannot_drive_the_terminal(tmp_path: Path) -> None:
    folder = workspace(tmp_path)
    (folder / "notes.txt").write_text("line one\x1b[2K\rline two\x07\x9b31m\n")
    hidden = {
        "tool": "write_file",
        # on a terminal, ESC [2K + CR erase what comes before; U+202E reverses what follows
        "args": {"path": "a.txt", "content": "rm -rf ~ \x1b[2K\rprint('hello')\u202e txt.a"},
    }
    replies = [
        {"tool": "read_file", "args": {"path": "notes.txt"}},
        "read\x1b]52;c;c2VjcmV0\x07 it",  # OSC 52: would set the clipboard
        hidden,
        "not written",
    ]
    result = run(tmp_path, chat_argv(replies, folder), b"read my notes\nwrite\nn\n/quit\n", {})
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode()
    for control in ("\x1b", "\r", "\x07", "\x9b", "\u202e"):
        assert control not in out, repr(control)
    assert "rm -rf ~ \u241b[2Kprint('hello')<U+202E> txt.a" in out  # shown as it will run
    assert "  ┆ line one\u241b[2K\n  ┆ line two\u2407\ufffd31m" in out
    assert "[Executor] read\u241b]52;c;c2VjcmV0\u2407 it" in out
    assert not (folder / "a.txt").exists()
