"""Commands and Ctrl-C at an approval question in `gui-agent chat`.

A slash command typed at `allow? [y]es once / [s] for this chat / [N]o:` is a command, not a No:
/stop stops the turn (the question is denied as it ends), /quit stops it and leaves, any
other runs (or says what is accepted) and the question is asked again. Ctrl-C there stops
the turn, and the question reads as denied by the person's stop, not by a "policy".
"""

from __future__ import annotations

from pathlib import Path

from gui_agent.repl_display import APPROVAL_PROMPT, format_event
from schema import ApprovalDecision, ApprovalResolved
from tests.gui_agent.test_repl_errors import WRITE_A_FILE, run_chat, workspace
from tests.gui_agent.test_terminal_keys import CTRL_C, chat

ASKED = APPROVAL_PROMPT.strip()
STOPPED = "approval: deny (stopped by the user)"


def test_stop_at_an_approval_question_denies_it_and_stops_the_turn(tmp_path: Path) -> None:
    folder = workspace(tmp_path)
    replies = [WRITE_A_FILE, "answer to the next message"]
    result = run_chat(tmp_path, replies, folder, "write a file\n/stop\nhello\n/quit\n")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert STOPPED in out
    # the turn did not go on to the model's next reply: the next message got it
    stopped = out.index("(interrupted: stopped by the user)")
    assert stopped < out.index("you> \n[Executor] answer to the next message")
    assert not (folder / "a.txt").exists()


def test_quit_at_an_approval_question_stops_the_turn_and_leaves(tmp_path: Path) -> None:
    folder = workspace(tmp_path)
    replies = [WRITE_A_FILE, "went on after the denial", "answer to a later line"]
    result = run_chat(tmp_path, replies, folder, "write a file\n/quit\nnever read\n")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert STOPPED in out
    assert "went on after the denial" not in out
    assert "answer to a later line" not in out  # the chat left: the next line was not sent
    assert not (folder / "a.txt").exists()


def test_other_commands_at_an_approval_question_run_and_the_question_is_asked_again(
    tmp_path: Path,
) -> None:
    folder = workspace(tmp_path)
    typed = "write a file\n/auto off\n/nonsense\ny\n/quit\n"
    result = run_chat(tmp_path, [WRITE_A_FILE, "wrote it"], folder, typed)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "AutoChat off" in out
    assert "unknown command /nonsense; commands:" in out
    assert out.count(ASKED) == 3  # asked, then again after each command
    assert out.index("AutoChat off") < out.index("unknown command") < out.rindex(ASKED)
    assert "approval: allow_once (user)" in out  # the `y` after them answered it
    assert (folder / "a.txt").read_text() == "hi"


def test_ctrl_c_at_an_approval_question_reads_as_the_persons_stop(tmp_path: Path) -> None:
    terminal, folder = chat(tmp_path, [WRITE_A_FILE, "never said"])
    terminal.read_until(b"you> ")
    terminal.type(b"write a file\n")
    terminal.read_until(b"allow?")
    terminal.type(CTRL_C)
    said = terminal.read_until(b"(interrupted")
    assert STOPPED.encode() in said
    assert b"(policy)" not in said
    terminal.read_until(b"you> ")
    terminal.type(b"/quit\n")
    assert terminal.exit_code() == 0
    assert not (folder / "a.txt").exists()


def test_an_approval_settled_by_the_turns_end_says_why_and_other_answers_say_who() -> None:
    def line(by: str, note: str | None = None) -> str | None:
        event = ApprovalResolved.model_validate(
            {"approval_id": "a", "decision": ApprovalDecision.DENY, "by": by, "note": note}
        )
        return format_event(event)

    assert line("policy", "stopped by the user") == f"\n  {STOPPED}"
    assert line("policy") == "\n  approval: deny (policy)"
    assert line("user", "not now") == "\n  approval: deny (user)"
    assert line("timeout", "no answer in time") == "\n  approval: deny (timeout)"
