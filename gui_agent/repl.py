"""The terminal chat: read what the person types, show the event stream, ask approvals inline.

Ctrl-C stops the running turn (not the program), also while an approval is asked (the
question is then denied as the turn ends, and said to be: "stopped by the user"). At the
prompt, Ctrl-C only says how to leave; a second one in a row leaves, so pressing it twice to
stop a reply never ends the chat. Ctrl-D (end of input) leaves at the prompt and denies at an
approval question; on a terminal the chat then goes on, from a pipe it is the end. During a
turn it ends AutoChat and leaves when the turn ends. A command typed at an approval question
is a command, not an answer: /stop stops the turn and /quit stops it and leaves (the
question is denied with it); any other runs, and the question is asked again.
A mistyped command prints one line saying what is accepted; the chat goes on.
Commands (`repl_commands`): /stop, /auto [on|off], /auto turns|tokens|time|delay VALUE,
/role NAME, /model NAME, /window, /help, /quit. A line starting with three double quotes
opens a message of several lines, closed by a line ending with them.

On a terminal, what is typed while a turn runs is acted on at once (`_TurnInput`); from a
pipe, each line waits for the turn before it, except the answer to an approval question.
From a pipe nobody sees a line taken as the answer, so it is shown after the question
with what it decided (`allow? ...: y → allowed once`); and a line that is no answer (not
y/yes, s/session, n/no or empty) is a message the script meant to send next: the call is
denied, saying so, and the line is kept for the prompt (`repl_display.piped_answer`).
Only a whole `y`/`yes` or `s`/`session` allows, typed after the question was shown: what was
half typed then is put back in the line once it is answered, never taken as the answer. On
a terminal the line is edited as in any terminal chat, and Up brings back the messages and
commands typed before (`repl_input`), a block of several lines whole; answers to approval
questions are not among them. SIGTERM and SIGHUP end the chat in order:
the running turn and the code its tools run are stopped; the exit code is 128 + the signal.
How events read is `repl_display`'s.

The chat takes the terminal (`ChatInput`) first thing, before it writes anything, so that keys
typed while it starts are shown once, in the line, not also where the terminal echoed them;
from then on everything it writes, log records too (`repl_logging`), goes through the input.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import signal
from collections import deque
from collections.abc import Awaitable
from pathlib import Path

from gui_agent.agents import Architecture
from gui_agent.agents.roles import ROLE_NAMES, parse_role, role_label
from gui_agent.cli import ReadEnd, detach_output, install_ending, install_interrupt, write_out
from gui_agent.exceptions import UserError
from gui_agent.interpreter import Interpreter
from gui_agent.manager import SessionManager, with_agent
from gui_agent.repl_commands import (
    AUTO_LIMITS,
    AUTO_USAGE,
    BLOCK,
    BLOCKS,
    COMMANDS,
    HELP,
    KEYS,
    Command,
    autochat_summary,
    parse_limit,
    run_command,
)
from gui_agent.repl_display import (
    ALLOW_ONCE_ANSWERS,
    ALLOW_SESSION_ANSWERS,
    APPROVAL_PROMPT,
    CUT_OFF_NOTE,
    EventLines,
    approval_question,
    format_event,
    parse_decision,
    piped_answer,
)
from gui_agent.repl_input import ChatInput
from gui_agent.repl_logging import logs_above_the_line
from gui_agent.telemetry import tracing_from_env
from gui_agent.tools.files import PRIVATE_DIR
from schema import ApprovalDecision, ApprovalRequested, ApprovalResolved

__all__ = [
    "ALLOW_ONCE_ANSWERS",
    "ALLOW_SESSION_ANSWERS",
    "APPROVAL_PROMPT",
    "AUTO_LIMITS",
    "AUTO_USAGE",
    "BLOCK",
    "BLOCKS",
    "BLOCK_PROMPT",
    "COMMANDS",
    "CUT_OFF_NOTE",
    "HELP",
    "KEYS",
    "LEAVE_HINT",
    "ROLE_NAMES",
    "SET_ASIDE_NOTE",
    "ChatInput",
    "Command",
    "approval_question",
    "autochat_summary",
    "format_event",
    "parse_decision",
    "parse_limit",
    "parse_role",
    "read_block",
    "role_label",
    "run_repl",
]

logger = logging.getLogger(__name__)

LEAVE_HINT = "  (Ctrl-C again, Ctrl-D or /quit leaves the chat)"
BLOCK_PROMPT = "... "
SET_ASIDE_NOTE = "\n  (what you were typing is kept: it comes back after this question)"


async def run_repl(
    models: tuple[str, ...],
    *,
    probe: bool,
    workdir: Path | None,
    auto: bool,
    source: str = "--model flag",
    agent: Architecture | None = None,
) -> int:
    """Chat in the terminal until /quit; the exit code (128 + the signal's number when
    SIGTERM or SIGHUP ended it). The tools work in `workdir` itself when given, else in a
    new folder under the data folder. `source` says where `models` were named; `agent`
    (your own, `--agent`) is the role the chat starts in."""
    reader = ChatInput(asyncio.get_running_loop())  # before anything is written: see above
    try:
        with logs_above_the_line(reader):
            ended_by = await _open(
                reader, models, probe=probe, workdir=workdir, auto=auto, source=source, agent=agent
            )
    finally:
        reader.close()  # also when the models cannot be had: the terminal is given back
    if ended_by is not None:
        return 128 + ended_by
    write_out("\n")
    return 0


async def _open(
    reader: ChatInput,
    models: tuple[str, ...],
    *,
    probe: bool,
    workdir: Path | None,
    auto: bool,
    source: str,
    agent: Architecture | None,
) -> signal.Signals | None:
    """Resolve the models, open a session and converse in it; the signal that ended it."""
    from connectors.registry import resolve_models
    from gui_agent.store import MemoryStore, default_data_dir

    registry = await resolve_models(explicit=models, explicit_source=source, probe_local=probe)
    manager = SessionManager(
        models=registry,
        store=MemoryStore(),
        workspace_root=default_data_dir() / "workspaces",
        hooks=tracing_from_env(os.environ),
        **with_agent(agent),
    )
    await manager.start()
    try:
        interpreter = await manager.create("local")
        if workdir is not None:
            # --workdir names the folder itself, not a root for per-session folders
            interpreter.session.workdir = workdir
        if auto:
            await interpreter.update(
                autochat=interpreter.session.autochat.model_copy(update={"enabled": True})
            )
        reader.write(f"model: {registry.default}   {HELP}\n")
        ended = await _converse(interpreter, manager, reader)
    finally:
        await manager.close()  # stops a running turn and the code its tools run
    if workdir is None:  # (a folder given with --workdir is the person's own)
        await _leave_folder(reader, interpreter.session.workdir_path())
    return ended


async def _leave_folder(reader: ChatInput, folder: Path) -> None:
    """The chat is not kept, but what its tools made is: say where, or, when they made
    nothing, remove the folder made for it (every chat left one behind, unsaid)."""
    if await asyncio.to_thread(_clear_folder, folder):
        reader.write(f"\n  (the files of this chat stay in {folder})\n")


def _clear_folder(folder: Path) -> bool:
    """Remove what the chat's own workings left in `folder`, the folder made for it: its
    private folder (where `run_python` writes its scripts, and the code's temp and cache
    folders: no chat can use them again), then `folder` itself when nothing else is in it.
    Whether it stays (the tools made files there)."""
    private = folder / PRIVATE_DIR
    try:
        if not folder.is_dir():  # (made when a tool first uses it)
            return False
        if private.is_dir() and not private.is_symlink():  # (a link made by the code: left)
            shutil.rmtree(private)
        if not any(folder.iterdir()):
            folder.rmdir()
            return False
    except OSError as exc:  # (a file made meanwhile, a folder not ours to remove)
        logger.info("left the chat's folder %s: %s", folder, exc)
    return True


async def _converse(
    interpreter: Interpreter, manager: SessionManager, reader: ChatInput
) -> signal.Signals | None:
    """Read lines until /quit, end of input or Ctrl-C twice in a row at the prompt. SIGTERM
    or SIGHUP ends it wherever it is (a turn, a question); it returns that signal."""
    loop = asyncio.get_running_loop()
    stopping: set[asyncio.Task[bool]] = set()
    conversation = asyncio.current_task()
    ended_by: list[signal.Signals] = []
    over = False  # the conversation has ended: a signal now leaves the closing alone

    def on_end(number: signal.Signals) -> None:
        if ended_by or over or conversation is None:
            return
        ended_by.append(number)
        conversation.cancel()
        if number is signal.SIGHUP:
            detach_output()  # the terminal is gone: nothing more can be shown
        else:
            reader.write(f"\n  ({number.name}: ending the chat)\n")

    def on_interrupt() -> None:
        reader.drop_line()  # what was typed is gone, as the terminal itself drops it
        if interpreter.busy:
            reader.write("\n  (stopping…)\n")
            task = loop.create_task(interpreter.stop())
            stopping.add(task)
            task.add_done_callback(stopping.discard)
        else:
            reader.interrupt()

    install_interrupt(loop, on_interrupt)
    install_ending(loop, on_end)
    previous: str | ReadEnd = ""
    try:
        while True:
            line = await reader.readline("\nyou> ")
            if line is ReadEnd.INTERRUPT:
                if previous is ReadEnd.INTERRUPT:
                    break
                reader.write("\n" + LEAVE_HINT)
                previous = line
                continue
            previous = line
            if line is ReadEnd.EOF:
                break
            if not _opens_block(line):
                reader.remember(line)  # a block is remembered whole, once sent (`read_block`)
            if _is_quit(line):
                break
            try:
                if await _handle(line, interpreter, manager, reader):
                    break
            except UserError as exc:
                reader.write(f"  ! {exc}\n")
    except asyncio.CancelledError:
        if not ended_by or conversation is None or conversation.uncancel():
            raise  # not (only) our own ending: a cancellation from outside goes on
        return ended_by[0]
    finally:
        over = True
        reader.close()
        await asyncio.gather(*stopping)
    return None


def _is_quit(line: str) -> bool:
    """Whether `line` is /quit (any case; words after it change nothing: it leaves)."""
    parts = line.split()
    return bool(parts) and parts[0].lower() == "/quit"


def _is_command(line: str) -> bool:
    """Whether `line` is a slash command (/stop, /quit, a mistyped one too)."""
    parts = line.split()
    return bool(parts) and parts[0].startswith("/")


def _opens_block(line: str) -> bool:
    return line.lstrip().startswith(BLOCK)


async def read_block(reader: ChatInput, first: str) -> str | ReadEnd:
    """The message of a block that `first` opens with three double quotes: the lines up to
    the one that ends with them, joined as typed (so a pasted text is one message, and its
    lines can start with `/`). ReadEnd when Ctrl-C or the end of input comes first: then
    nothing is sent. A block sent is remembered whole, its lines as typed, so Up brings
    back the message (Enter sends it again), not its last line."""
    typed = [first]
    lines: list[str] = []
    text = first.lstrip()[len(BLOCK) :]
    while not text.rstrip().endswith(BLOCK):
        if lines or text.strip():
            lines.append(text)
        line = await reader.readline(BLOCK_PROMPT)
        if isinstance(line, ReadEnd):
            reader.write(f"\n  ({line.value}: the message was not sent)\n")
            return line
        typed.append(line)
        text = line
    reader.remember("\n".join(typed))
    lines.append(text.rstrip()[: -len(BLOCK)])
    return "\n".join(lines).strip("\n")


async def _handle(
    line: str, interpreter: Interpreter, manager: SessionManager, reader: ChatInput
) -> bool:
    """Act on a line typed at the prompt: a command, a message, or the first line of a
    block (`read_block`); True when the person asked to leave meanwhile."""
    parts = line.split()
    if not parts:
        return False
    action: Awaitable[object]
    if _opens_block(line):
        block = await read_block(reader, line)
        if isinstance(block, ReadEnd):
            return block is ReadEnd.EOF and not reader.terminal  # a pipe's end: leave
        action = interpreter.send(block)
    elif parts[0].startswith("/"):
        # a command may start a turn (/auto on after a reply): it is shown like any other
        action = _command(parts, interpreter, manager, reader)
    else:
        action = interpreter.send(line)
    return await _follow(interpreter, manager, reader, action)


async def _command(
    parts: list[str],
    interpreter: Interpreter,
    manager: SessionManager,
    reader: ChatInput,
    lead: str = "",
) -> None:
    """Run the slash command `parts` names and show what it says, after `lead`: during a
    turn a line break, since the events it causes (a role switch) are shown meanwhile and
    do not end their line."""
    said = await run_command(parts[0], parts[1:], interpreter, manager)
    if said:
        reader.write(lead + said)


async def _follow(
    interpreter: Interpreter, manager: SessionManager, reader: ChatInput, action: Awaitable[object]
) -> bool:
    """Do `action`; if a turn is running after it, print its events until the session is
    idle, taking what the person types meanwhile (`_TurnInput`). True when they asked to
    leave meanwhile (/quit)."""
    async with interpreter.subscribe() as events:
        await action
        typed = _TurnInput(interpreter, manager, reader)
        lines = EventLines()
        try:
            while interpreter.busy:
                typed.open()
                async for event in events.until_idle():
                    text = lines.format(event)
                    if text:
                        reader.write(text)
                    if isinstance(event, ApprovalRequested):
                        typed.ask(event)
                    elif isinstance(event, ApprovalResolved):
                        await typed.withdraw(event.approval_id)
                await typed.close()  # a message typed as the turn ended may start the next
                if typed.leave:
                    break
        finally:
            await typed.close()
        return typed.leave


class _TurnInput:
    """What the person types while a turn runs, read by one task this object owns.

    The oldest open approval question takes the next line; questions are asked one at a
    time, and one settled another way (stop, timeout) is withdrawn. An answer starts empty:
    what was half typed when the question came is set aside and put back in the line once
    no question is open (it starts the next message), and a line entered before the
    question was shown is acted on as it was meant, never taken as the answer. On a
    terminal every other line is acted on at once, so the person can steer the turn they
    watch: a command runs (/stop stops the turn, /auto off ends AutoChat), /quit stops the
    turn and leaves, and a message is sent: the agent reads it next, and it ends AutoChat.
    The end of input (Ctrl-D) ends AutoChat and leaves when the turn ends. A block being
    typed (`read_block`) takes the lines up to its end; a question shown meanwhile takes
    the next one. From a pipe, lines are read only to answer questions: a script's next
    line waits for the turn, and a line that is no answer denies the call and is kept for
    the prompt (read again for a next question of the turn). At a question, a slash
    command is acted on as at any time (/stop, /quit stop the turn, which denies the
    question), never taken as a No: the question is then asked again, if it is still open.
    """

    def __init__(
        self, interpreter: Interpreter, manager: SessionManager, reader: ChatInput
    ) -> None:
        self._interpreter = interpreter
        self._manager = manager
        self._reader = reader
        self._questions: deque[ApprovalRequested] = deque()
        self._task: asyncio.Task[None] | None = None
        self._reading = False  # the task waits for a line (not acting on one)
        self._set_aside = ""  # typed before the question: given back once it is answered
        self.leave = False

    def open(self) -> None:
        """Start reading, if there is anything to read for."""
        if (self._reader.terminal or self._questions) and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._read(), name="typed during the turn")

    def ask(self, request: ApprovalRequested) -> None:
        self._questions.append(request)
        if len(self._questions) == 1:
            self._show_question()
        self.open()

    async def withdraw(self, approval_id: str) -> None:
        """The request was settled (answered here, or by a stop or a timeout)."""
        was_asked = bool(self._questions) and self._questions[0].approval_id == approval_id
        self._questions = deque(q for q in self._questions if q.approval_id != approval_id)
        if was_asked:
            self._next_question()
        if not self._questions and not self._reader.terminal:
            await self.close()

    async def close(self) -> None:
        """Stop reading: at once while waiting for a line (no line is lost), else once the
        line being acted on is done. What was set aside for a question is given back."""
        self._give_back()
        task, self._task = self._task, None
        if task is None:
            return
        if self._reading:
            task.cancel()
        await asyncio.wait({task})
        failure = None if task.cancelled() else task.exception()
        if failure is not None:
            raise failure

    def _show_question(self) -> None:
        """Ask the oldest open question with an empty answer line: what is half typed is
        set aside, so Enter cannot send it as the answer (a `yes` meant to start a message
        would run code the person never saw)."""
        typed = self._reader.set_aside()
        if typed:
            self._set_aside += typed
            self._reader.write(SET_ASIDE_NOTE)
        self._reader.write(approval_question(self._questions[0]) + APPROVAL_PROMPT)

    def _next_question(self) -> None:
        """The question asked was settled: ask the next one, or give back what was typed."""
        if self._questions:
            self._show_question()
        else:
            self._give_back()

    def _give_back(self) -> None:
        kept, self._set_aside = self._set_aside, ""
        self._reader.put_back(kept)

    async def _read(self) -> None:
        while self._reader.terminal or self._questions:
            self._reading = True
            try:
                line = await self._reader.readline("")
            finally:
                self._reading = False
            if self._questions and self._answers(line):
                if isinstance(line, str) and _is_command(line):
                    await self._act(line)  # at the question, a command is no answer
                    self._ask_again()
                else:
                    self._answer(self._questions.popleft(), line)
            elif isinstance(line, str):
                asked = bool(self._questions)  # entered before the question: it waits
                await self._act(line)
                if asked:
                    self._ask_again()
            elif line is ReadEnd.EOF:
                await self._end_of_input()
            if self._task is not asyncio.current_task():
                return  # closed while acting on the line

    def _ask_again(self) -> None:
        """After a line acted on while a question was open: ask it again, below what the
        line made happen, if it is open still (a /stop or /quit ended it with the turn)."""
        open_now = {request.approval_id for request in self._interpreter.pending_approvals}
        if self._questions and self._questions[0].approval_id in open_now:
            self._show_question()

    def _answers(self, line: str | ReadEnd) -> bool:
        """Whether `line` answers the question asked: not a line entered before it was."""
        return isinstance(line, ReadEnd) or self._reader.entered_after_set_aside

    def _answer(self, request: ApprovalRequested, answer: str | ReadEnd) -> None:
        if isinstance(answer, ReadEnd):
            self._reader.write(f"\n  ({answer.value}: denied)")
            decision = ApprovalDecision.DENY
        elif self._reader.terminal:
            decision = parse_decision(answer)  # (the person sees what they typed)
        else:  # from a pipe: say which line answered, and how; a message is kept
            decision, said, kept = piped_answer(answer)
            self._reader.write(said)
            if kept:
                self._reader.keep(answer)
        self._interpreter.approve(request.approval_id, decision)
        self._next_question()

    async def _end_of_input(self) -> None:
        """Ctrl-D: leave when this turn ends. AutoChat ends now (switched off, so the
        session says why it stopped), else its next automatic turn would start first."""
        if not self._interpreter.autochat_active:
            self._reader.write("\n  (end of input: leaving when this turn ends)\n")
        else:
            self._reader.write("\n  (end of input: AutoChat ends; leaving when this turn ends)\n")
            settings = self._interpreter.session.autochat
            await self._interpreter.update(autochat=settings.model_copy(update={"enabled": False}))
        self.leave = True

    async def _act(self, line: str) -> None:
        parts = line.split()
        if not parts:
            return
        if not _opens_block(line):
            self._reader.remember(line)  # a block is remembered whole, once sent
        try:
            if _is_quit(line):
                self.leave = True
                await self._interpreter.stop()
            elif _opens_block(line):
                block = await read_block(self._reader, line)
                if isinstance(block, str):
                    await self._interpreter.send(block)
                    self._reader.write("\n  (sent: the agent reads it next)\n")
            elif parts[0].startswith("/"):
                await _command(parts, self._interpreter, self._manager, self._reader, "\n")
            else:
                await self._interpreter.send(line)
                self._reader.write("\n  (sent: the agent reads it next)\n")
        except UserError as exc:
            self._reader.write(f"\n  ! {exc}\n")
