"""`gui-agent chat` when the person types ahead of the chat, leaves during AutoChat, or
brings back what they sent: what they typed is used only as they meant it.

Text half typed while a reply streams is never the answer to an approval question shown
after it (a `yes` meant to start a message would run code the person never saw): the
question starts empty and the text comes back in the line once it is answered. Ctrl-D
during AutoChat ends it with the turn; `/auto on` starts AutoChat whenever it says so and
`/auto` says whether it runs; Up brings back a block whole.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from gui_agent.repl import format_event
from gui_agent.repl_commands import run_command
from gui_agent.repl_input import ChatInput
from schema import ErrorEvent, RunFinished, RunOutcome
from tests.gui_agent.helpers import scripted_manager
from tests.gui_agent.screen import Screen
from tests.gui_agent.test_repl_errors import chat_argv, workspace
from tests.gui_agent.test_terminal_io import run
from tests.gui_agent.test_terminal_keys import CTRL_D
from tests.gui_agent.test_terminal_live import live_chat

QUESTION = b"allow? [y]es once / [s] for this chat / [N]o: "
UP = b"\x1b[A"


# -- typed ahead of an approval question ------------------------------------------------------


def test_text_typed_while_a_reply_streams_is_not_the_answer_and_comes_back_after_it(
    tmp_path: Path,
) -> None:
    thinking: dict[str, object] = {
        "say": "thinking",
        "wait": "keys",
        "tool": {"path": "a.txt", "content": "hi"},
    }
    terminal = live_chat(tmp_path, [thinking, {"say": "not written"}, {}])
    terminal.read_until(b"you> ")
    terminal.type(b"write a file\n")
    terminal.read_until(b"thinking")
    terminal.type(b"yes")  # the start of a message, not ended: then the question comes
    asked = terminal.read_until(QUESTION)
    terminal.type(b"\n")  # Enter on the question's empty line: no, not the "yes" above
    answered = terminal.read_until(b"not written")
    assert b"approval: deny (user)" in answered
    assert b"allow_once" not in answered
    assert b"(what you were typing is kept: it comes back after this question)" in asked
    terminal.read_until(b"you> yes")  # the text is back, as the start of the next message
    terminal.type(b" please\n")
    terminal.read_until(b"you said: yes please")
    terminal.read_until(b"you> ")
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0
    assert not (tmp_path / "work" / "a.txt").exists()
    screen = Screen(80)
    screen.feed(terminal.seen.decode())
    asked_rows = [row.strip() for row in screen.rows if "allow?" in row]
    assert asked_rows == [QUESTION.decode().strip()]  # the question showed empty


class _Typed(ChatInput):
    """The chat's input as on a terminal, with keys the test types (`_typed`) and no
    terminal behind it: nothing arrives from there until it is closed."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._over = threading.Event()
        super().__init__(loop, {"TERM": "dumb"})

    @property
    def editing(self) -> bool:
        return True

    def _read_chunk(self, size: int) -> bytes:
        self._over.wait()
        return b""

    def close(self) -> None:
        self._over.set()
        super().close()


async def test_a_line_entered_before_a_question_is_shown_is_not_its_answer() -> None:
    reader = _Typed(asyncio.get_running_loop())
    try:
        reader._typed("go on\n")  # entered: on its way to the chat as the question comes
        reader._typed("yes")  # half typed
        assert reader.set_aside() == "yes"  # the question is asked: its answer starts empty
        assert await reader.readline("") == "go on"
        assert not reader.entered_after_set_aside  # a message, whatever it says
        reader._typed("n\n")
        assert await reader.readline("") == "n"
        assert reader.entered_after_set_aside  # the answer
        reader.put_back("yes")
        reader._typed(" please\n")
        assert await reader.readline("") == "yes please"
    finally:
        reader.close()


# -- leaving and AutoChat -------------------------------------------------------------------


def test_ctrl_d_during_autochat_ends_it_and_leaves_when_the_turn_ends(tmp_path: Path) -> None:
    steps: list[dict[str, object]] = [
        {"say": "started"},
        {"say": "automatic", "wait": "keys"},  # the first automatic turn, until a key comes
        {"say": "another automatic turn"},
    ]
    terminal = live_chat(tmp_path, steps, "--auto")
    terminal.read_until(b"you> ")
    terminal.type(b"work on it\n")
    terminal.read_until(b"AutoChat turn 1/5")
    terminal.read_until(b"automatic")
    terminal.type(CTRL_D)
    assert terminal.exit_code() == 0
    seen = terminal.seen.decode()
    assert "(end of input: AutoChat ends; leaving when this turn ends)" in seen
    assert "AutoChat stopped after 1 automatic turn: it was switched off" in seen
    assert "AutoChat turn 2/" not in seen
    assert "another automatic turn" not in seen


def test_auto_on_after_autochat_stopped_runs_it_again_and_auto_says_whether_it_runs(
    tmp_path: Path,
) -> None:
    replies = ["first reply", "automatic one", "automatic two", "never"]
    typed = b"/auto turns 1\nhello\n/auto on\n/auto\n/auto on\n/quit\n"
    result = run(tmp_path, chat_argv(replies, workspace(tmp_path)), typed, {})
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode()
    assert out.count("AutoChat turn 1/1") == 2
    assert (
        out.count(
            "AutoChat stopped after 1 automatic turn: it reached its limit of automatic turns"
        )
        == 2
    )
    assert "automatic two" in out  # the second /auto on ran, as it said
    assert "never" not in out
    assert "AutoChat on (not running: your next message starts it, /auto on starts it now)" in out


async def test_auto_on_before_any_message_says_what_will_start_it(tmp_path: Path) -> None:
    manager = scripted_manager(tmp_path)
    await manager.start()
    try:
        interpreter = await manager.create("local")
        said = await run_command("/auto", ["on"], interpreter, manager)
        assert said == "AutoChat on: your next message starts it, toward what that message asks\n"
        assert not interpreter.busy
        said = await run_command("/auto", [], interpreter, manager)
        assert said.startswith("AutoChat on (not running: your next message starts it")
        said = await run_command("/auto", ["off"], interpreter, manager)
        assert said == "AutoChat off\n"
        said = await run_command("/auto", [], interpreter, manager)
        assert said.startswith("AutoChat off: at most 5 turns")
    finally:
        await manager.close()


def test_quit_with_words_after_it_leaves(tmp_path: Path) -> None:
    typed = b"hello\n/quit now\nnever sent\n"
    result = run(tmp_path, chat_argv(["one", "two"], workspace(tmp_path)), typed, {})
    assert result.returncode == 0, result.stderr.decode()
    out = result.stdout.decode()
    assert "unknown command" not in out
    assert "[Executor] one" in out
    assert "two" not in out


# -- what the chat shows ----------------------------------------------------------------------


def test_up_brings_back_a_block_whole_and_enter_sends_it_again(tmp_path: Path) -> None:
    terminal = live_chat(tmp_path, [{}])
    terminal.read_until(b"you> ")
    terminal.type(b'"""\nfirst\nsecond"""\n')
    terminal.read_until(b"you said: first\r\nsecond ")
    terminal.read_until(b"you> ")
    terminal.type(UP + b"\n")
    terminal.read_until(b"you said: first\r\nsecond ")  # the same message again
    terminal.read_until(b"you> ")
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0
    assert b'you said: second"""' not in terminal.seen


def test_a_role_switched_during_a_turn_is_said_on_a_line_of_its_own(tmp_path: Path) -> None:
    terminal = live_chat(tmp_path, [{"endless": True}, {}])
    terminal.read_until(b"you> ")
    terminal.type(b"talk\n")
    terminal.read_until(b"w20 ")
    terminal.type(b"/role thought\n")
    switched = terminal.read_until(b"role: thought")
    terminal.type(b"/stop\n")
    terminal.read_until(b"you> ")
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0
    assert switched.endswith(b"\r\nrole: thought")
    assert b"agent: Thought" in terminal.seen
    assert b"Thoughtrole" not in terminal.seen


def test_a_failed_turn_says_its_error_once() -> None:
    error = "the connection to the server failed"
    shown = [
        format_event(ErrorEvent(code="model_error", message=error)),
        format_event(RunFinished(outcome=RunOutcome.ERROR, detail=error)),
    ]
    assert "".join(text or "" for text in shown).count(error) == 1
    assert shown[1] == "\n  (error)\n"
    stopped = format_event(RunFinished(outcome=RunOutcome.INTERRUPTED, detail="stopped by you"))
    assert stopped == "\n  (interrupted: stopped by you)\n"  # other endings keep their detail
