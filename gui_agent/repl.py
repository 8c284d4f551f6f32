"""The terminal chat: the event stream printed readably, approvals asked inline.

Ctrl-C stops the running turn (not the program), also while an approval is asked. At the
prompt, Ctrl-C only says how to leave; a second one in a row leaves, so pressing it twice to
stop a reply never ends the chat. Ctrl-D (end of input) leaves at the prompt and denies at an
approval question; on a terminal the chat then goes on, from a pipe it is the end.
A mistyped command prints one line saying what is accepted; the chat goes on.
Commands: /stop, /auto [on|off], /auto turns|tokens|time|delay VALUE, /role NAME,
/model NAME, /window, /help, /quit. A line starting with three double quotes opens a message
of several lines, closed by a line ending with them.

On a terminal, what is typed while a turn runs is acted on at once (`_TurnInput`); from a
pipe, each line waits for the turn before it, except the answer to an approval question.
Only a whole `y`/`yes` or `s`/`session` allows. SIGTERM and SIGHUP end the chat in order:
the running turn and the code its tools run are stopped; the exit code is 128 + the signal.
"""

from __future__ import annotations

import asyncio
import os
import signal
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Final

from pydantic import ValidationError

from gui_agent.cli import (
    LineReader,
    ReadEnd,
    detach_output,
    install_ending,
    install_interrupt,
    write_out,
)
from gui_agent.exceptions import InvalidRequest, UserError
from gui_agent.interpreter import Interpreter
from gui_agent.manager import SessionManager
from gui_agent.telemetry import tracing_from_env
from schema import (
    AgentName,
    AgentSwitched,
    ApprovalDecision,
    ApprovalRequested,
    ApprovalResolved,
    AutoChatSettings,
    AutoChatStopped,
    AutoChatTurn,
    ErrorEvent,
    Event,
    MessageCompleted,
    MessageStarted,
    MessageType,
    Role,
    RunFinished,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
    UsageReported,
)

HELP = "commands: /stop /auto [on|off] /auto LIMIT VALUE /role NAME /model NAME /window /help /quit"
KEYS = "keys: Ctrl-C stops the reply (at the prompt: press twice to leave), Ctrl-D leaves"
AUTO_USAGE = (
    "usage: /auto on|off; /auto shows AutoChat and its limits; /auto turns N, "
    "/auto tokens N|off, /auto time SECONDS|off, /auto delay SECONDS set them"
)
LEAVE_HINT = "  (Ctrl-C again, Ctrl-D or /quit leaves the chat)"
APPROVAL_PROMPT = "  allow? [y]es once / [s]ession / [N]o: "
BLOCK = '"""'
BLOCK_PROMPT = "... "
BLOCKS = f"{BLOCK} at the start of a line opens a message of several lines; {BLOCK} ends it"
CUT_OFF_NOTE = "cut off at the model's output limit: raise max_tokens or say 'continue'"

ROLE_NAMES: Final[Mapping[str, AgentName]] = {
    "executor": AgentName.AGENT_EXECUTOR,
    "planner": AgentName.LLM_PLANNER,
    "supervisor": AgentName.SUPERVISOR,
    "crew": AgentName.CREW,
    "thought": AgentName.THOUGHT,
}
"""The role names the README uses; the enum names (AGENT_EXECUTOR, ...) work as well."""


def format_event(event: Event) -> str | None:
    """How the terminal shows one event; None for events it does not print."""
    if isinstance(event, MessageStarted):
        who = event.agent.value if event.agent else event.role.value
        return f"\n[{who}] "
    if isinstance(event, TextDelta):
        return event.delta if event.channel == "content" else None
    if isinstance(event, MessageCompleted):
        message = event.message
        if message.role is Role.TOOL:
            label = "console" if message.type is MessageType.CONSOLE else message.name or "tool"
            body = message.content if len(message.content) < 2000 else message.content[:2000] + "…"
            return f"\n  ┆ {label}:\n" + "\n".join("  ┆ " + line for line in body.splitlines())
        if message.role is Role.ASSISTANT and message.status.value != "complete":
            return f"  [{message.status.value}]"
        if message.role is Role.ASSISTANT and message.metadata.get("cut_off"):
            return f"\n  [{CUT_OFF_NOTE}]"
        return None
    if isinstance(event, ToolCallStarted):
        return f"\n  → {event.call.name}({event.call.arguments})"
    if isinstance(event, ToolCallFinished):
        mark = "✗" if event.result.is_error else "✓"
        return f"\n  {mark} {event.result.name} ({event.result.duration_ms:.0f} ms)"
    if isinstance(event, ApprovalResolved):
        return f"\n  approval: {event.decision.value} ({event.by})"
    if isinstance(event, AgentSwitched):
        return f"\n  ⇄ agent: {event.to_agent.value}"
    if isinstance(event, UsageReported):
        return None
    if isinstance(event, ErrorEvent):
        return f"\n  ! {event.code}: {event.message}"
    if isinstance(event, RunFinished):
        return f"\n  ({event.outcome.value}{': ' + event.detail if event.detail else ''})\n"
    if isinstance(event, AutoChatTurn):
        return f"\n  ↻ AutoChat turn {event.turn}/{event.max_turns}"
    if isinstance(event, AutoChatStopped):
        detail = f" ({event.detail})" if event.detail else ""
        return f"\n  ↻ AutoChat stopped: {event.reason.value}{detail}\n"
    return None


def role_label(agent: AgentName) -> str:
    """The name a person types for `agent`: `executor` for AGENT_EXECUTOR."""
    return next((name for name, role in ROLE_NAMES.items() if role is agent), agent.value.lower())


def parse_role(text: str, available: Iterable[AgentName]) -> AgentName:
    """The role a person named (`planner`, `LLM_PLANNER`, any case), or InvalidRequest
    naming the roles this chat offers."""
    offered = list(available)
    key = text.strip().lower()
    role = ROLE_NAMES.get(key) or next((a for a in AgentName if a.value.lower() == key), None)
    if role is None or role not in offered:
        choices = ", ".join(role_label(agent) for agent in offered)
        raise InvalidRequest(f"unknown role {text!r}; choose one of: {choices}")
    return role


ALLOW_ONCE_ANSWERS: Final = frozenset({"y", "yes"})
ALLOW_SESSION_ANSWERS: Final = frozenset({"s", "session"})


def parse_decision(answer: str | None) -> ApprovalDecision:
    """`y` or `yes` allows once, `s` or `session` for the session (any case); anything
    else, or end of input, denies. Whole words only: `stop`, `sure` or `skip` deny."""
    choice = (answer or "").strip().lower()
    if choice in ALLOW_ONCE_ANSWERS:
        return ApprovalDecision.ALLOW_ONCE
    if choice in ALLOW_SESSION_ANSWERS:
        return ApprovalDecision.ALLOW_SESSION
    return ApprovalDecision.DENY


# Bidirectional embeddings, overrides and isolates: they reorder how a line is shown, so the
# code an approval shows could read differently from the code that runs ("Trojan Source").
_BIDI_CONTROLS: Final = {
    code: f"<U+{code:04X}>" for code in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))
}


def approval_question(request: ApprovalRequested) -> str:
    """What a person is asked to allow, shown exactly: no character in it can reorder or
    hide what will run (terminal controls are made visible when it is written out)."""
    return f"\n  ? {request.summary}\n{request.detail}\n".translate(_BIDI_CONTROLS)


_out = write_out


async def run_repl(
    models: tuple[str, ...],
    *,
    probe: bool,
    workdir: Path | None,
    auto: bool,
    source: str = "--model flag",
) -> int:
    """Chat in the terminal until /quit; the exit code (128 + the signal's number when
    SIGTERM or SIGHUP ended it). The tools work in `workdir` itself when given, else in a
    new folder under the data folder. `source` says where `models` were named."""
    from connectors.registry import resolve_models
    from gui_agent.store import MemoryStore, default_data_dir

    registry = await resolve_models(explicit=models, explicit_source=source, probe_local=probe)
    manager = SessionManager(
        models=registry,
        store=MemoryStore(),
        workspace_root=default_data_dir() / "workspaces",
        hooks=tracing_from_env(os.environ),
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
        _out(f"model: {registry.default}   {HELP}\n")
        ended_by = await _converse(interpreter, manager)
    finally:
        await manager.close()  # stops a running turn and the code its tools run
    if ended_by is not None:
        return 128 + ended_by
    _out("\n")
    return 0


async def _converse(interpreter: Interpreter, manager: SessionManager) -> signal.Signals | None:
    """Read lines until /quit, end of input or Ctrl-C twice in a row at the prompt. SIGTERM
    or SIGHUP ends it wherever it is (a turn, a question); it returns that signal."""
    loop = asyncio.get_running_loop()
    reader = LineReader(loop)
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
            _out(f"\n  ({number.name}: ending the chat)\n")

    def on_interrupt() -> None:
        if interpreter.busy:
            _out("\n  (stopping…)\n")
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
                _out("\n" + LEAVE_HINT)
                previous = line
                continue
            previous = line
            if line is ReadEnd.EOF or line.strip() == "/quit":
                break
            try:
                if await _handle(line, interpreter, manager, reader):
                    break
            except UserError as exc:
                _out(f"  ! {exc}\n")
    except asyncio.CancelledError:
        if not ended_by or conversation is None or conversation.uncancel():
            raise  # not (only) our own ending: a cancellation from outside goes on
        return ended_by[0]
    finally:
        over = True
        await asyncio.gather(*stopping)
    return None


async def read_block(reader: LineReader, first: str) -> str | ReadEnd:
    """The message of a block that `first` opens with three double quotes: the lines up to
    the one that ends with them, joined as typed (so a pasted text is one message, and its
    lines can start with `/`). ReadEnd when Ctrl-C or the end of input comes first: then
    nothing is sent."""
    lines: list[str] = []
    text = first.lstrip()[len(BLOCK) :]
    while not text.rstrip().endswith(BLOCK):
        if lines or text.strip():
            lines.append(text)
        line = await reader.readline(BLOCK_PROMPT)
        if isinstance(line, ReadEnd):
            _out(f"\n  ({line.value}: the message was not sent)\n")
            return line
        text = line
    lines.append(text.rstrip()[: -len(BLOCK)])
    return "\n".join(lines).strip("\n")


async def _handle(
    line: str, interpreter: Interpreter, manager: SessionManager, reader: LineReader
) -> bool:
    """Act on a line typed at the prompt: a command, a message, or the first line of a
    block (`read_block`); True when the person asked to leave meanwhile."""
    parts = line.split()
    if not parts:
        return False
    action: Awaitable[object]
    if line.lstrip().startswith(BLOCK):
        block = await read_block(reader, line)
        if isinstance(block, ReadEnd):
            return block is ReadEnd.EOF and not reader.terminal  # a pipe's end: leave
        action = interpreter.send(block)
    elif parts[0].startswith("/"):
        # a command may start a turn (/auto on after a reply): it is shown like any other
        action = _command(parts[0], parts[1:], interpreter, manager)
    else:
        action = interpreter.send(line)
    return await _follow(interpreter, manager, reader, action)


Command = Callable[[list[str], Interpreter, SessionManager], Awaitable[None]]


async def _command(
    name: str, args: list[str], interpreter: Interpreter, manager: SessionManager
) -> None:
    """Run one slash command; InvalidRequest (one line, with the choices) when it is wrong."""
    handler = COMMANDS.get(name.lower())
    if handler is None:
        raise InvalidRequest(f"unknown command {name}; {HELP}")
    await handler(args, interpreter, manager)


async def _stop(args: list[str], interpreter: Interpreter, manager: SessionManager) -> None:
    if not await interpreter.stop():
        _out("nothing is running\n")


AUTO_LIMITS: Final[Mapping[str, tuple[str, type[int] | type[float]]]] = {
    "turns": ("max_turns", int),
    "tokens": ("token_budget", int),
    "time": ("time_budget_s", float),
    "delay": ("delay_s", float),
}
"""`/auto NAME VALUE`: the AutoChat limit each name sets, and the kind of number it takes."""


def autochat_summary(settings: AutoChatSettings) -> str:
    """AutoChat's switch and every limit, in one line."""
    tokens = f"{settings.token_budget:,} tokens" if settings.token_budget else "no token budget"
    time = f"{settings.time_budget_s:g} s in all" if settings.time_budget_s else "no time budget"
    return (
        f"AutoChat {'on' if settings.enabled else 'off'}: at most {settings.max_turns} "
        f"turn{'' if settings.max_turns == 1 else 's'}, "
        f"{tokens}, {time}, {settings.delay_s:g} s between turns"
    )


def parse_limit(name: str, value: str, current: AutoChatSettings) -> AutoChatSettings:
    """`current` with the limit `/auto NAME VALUE` sets, or InvalidRequest saying why not."""
    if name not in AUTO_LIMITS:
        raise InvalidRequest(AUTO_USAGE)
    field, kind = AUTO_LIMITS[name]
    number: int | float | None
    if value.lower() in ("off", "none") and field in ("token_budget", "time_budget_s"):
        number = None
    else:
        try:
            number = kind(value)
        except ValueError:
            raise InvalidRequest(f"/auto {name}: expected a number, got {value!r}") from None
    try:
        return AutoChatSettings.model_validate({**current.model_dump(), field: number})
    except ValidationError as exc:
        raise InvalidRequest(f"/auto {name}: {exc.errors()[0]['msg']}") from None


async def _auto(args: list[str], interpreter: Interpreter, manager: SessionManager) -> None:
    current = interpreter.session.autochat
    if not args:
        _out(autochat_summary(current) + "\n")
        return
    if len(args) == 1 and args[0].lower() in ("on", "off"):
        enabled = args[0].lower() == "on"
        await interpreter.update(autochat=current.model_copy(update={"enabled": enabled}))
        _out(f"AutoChat {'on' if enabled else 'off'}\n")
        return
    if len(args) != 2:
        raise InvalidRequest(AUTO_USAGE)
    updated = parse_limit(args[0].lower(), args[1], current)
    await interpreter.update(autochat=updated)
    _out(autochat_summary(updated) + "\n")


async def _role(args: list[str], interpreter: Interpreter, manager: SessionManager) -> None:
    if len(args) != 1:
        choices = ", ".join(role_label(agent) for agent in interpreter.architectures)
        raise InvalidRequest(f"usage: /role NAME; roles: {choices}")
    role = parse_role(args[0], interpreter.architectures)
    await interpreter.set_agent(role)
    _out(f"role: {role_label(role)}\n")


async def _model(args: list[str], interpreter: Interpreter, manager: SessionManager) -> None:
    names = manager.models.names()
    if len(args) != 1:
        raise InvalidRequest(f"usage: /model NAME; models: {', '.join(names)}")
    if args[0] not in names:
        raise InvalidRequest(f"unknown model {args[0]!r}; choose one of: {', '.join(names)}")
    await manager.set_model(interpreter, args[0])
    _out(f"model: {args[0]}\n")


async def _window(args: list[str], interpreter: Interpreter, manager: SessionManager) -> None:
    window = interpreter.window()
    _out(f"{len(window.messages)} messages, {window.token_count} tokens in the window\n")


async def _help(args: list[str], interpreter: Interpreter, manager: SessionManager) -> None:
    _out(f"{HELP}\n{AUTO_USAGE}\n{KEYS}\n{BLOCKS}\n")


COMMANDS: Final[Mapping[str, Command]] = {
    "/stop": _stop,
    "/auto": _auto,
    "/role": _role,
    "/model": _model,
    "/window": _window,
    "/help": _help,
}


async def _follow(
    interpreter: Interpreter, manager: SessionManager, reader: LineReader, action: Awaitable[object]
) -> bool:
    """Do `action`; if a turn is running after it, print its events until the session is
    idle, taking what the person types meanwhile (`_TurnInput`). True when they asked to
    leave meanwhile (/quit)."""
    async with interpreter.subscribe() as events:
        await action
        typed = _TurnInput(interpreter, manager, reader)
        try:
            while interpreter.busy:
                typed.open()
                async for event in events.until_idle():
                    text = format_event(event)
                    if text:
                        _out(text)
                    if isinstance(event, ApprovalRequested):
                        typed.ask(event)
                    elif isinstance(event, ApprovalResolved):
                        await typed.withdraw(event.approval_id)
                await typed.close()  # a message typed as the turn ended may start the next
        finally:
            await typed.close()
        return typed.leave


class _TurnInput:
    """What the person types while a turn runs, read by one task this object owns.

    The oldest open approval question takes the next line; questions are asked one at a
    time, and one settled another way (stop, timeout) is withdrawn. On a terminal every
    other line is acted on at once, so the person can steer the turn they watch: a command
    runs (/stop stops the turn, /auto off ends AutoChat), /quit stops the turn and leaves,
    and a message is sent: the agent reads it next, and it ends AutoChat. A block being typed
    (`read_block`) takes the lines up to its end; a question shown meanwhile takes the next
    one. From a pipe, lines are read only to answer questions: a script's next line waits
    for the turn.
    """

    def __init__(
        self, interpreter: Interpreter, manager: SessionManager, reader: LineReader
    ) -> None:
        self._interpreter = interpreter
        self._manager = manager
        self._reader = reader
        self._questions: deque[ApprovalRequested] = deque()
        self._task: asyncio.Task[None] | None = None
        self._reading = False  # the task waits for a line (not acting on one)
        self.leave = False

    def open(self) -> None:
        """Start reading, if there is anything to read for."""
        if (self._reader.terminal or self._questions) and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._read(), name="typed during the turn")

    def ask(self, request: ApprovalRequested) -> None:
        self._questions.append(request)
        if len(self._questions) == 1:
            _out(approval_question(request) + APPROVAL_PROMPT)
        self.open()

    async def withdraw(self, approval_id: str) -> None:
        """The request was settled (answered here, or by a stop or a timeout)."""
        was_asked = bool(self._questions) and self._questions[0].approval_id == approval_id
        self._questions = deque(q for q in self._questions if q.approval_id != approval_id)
        if was_asked and self._questions:
            _out(approval_question(self._questions[0]) + APPROVAL_PROMPT)
        if not self._questions and not self._reader.terminal:
            await self.close()

    async def close(self) -> None:
        """Stop reading: at once while waiting for a line (no line is lost), else once the
        line being acted on is done."""
        task, self._task = self._task, None
        if task is None:
            return
        if self._reading:
            task.cancel()
        await asyncio.wait({task})
        failure = None if task.cancelled() else task.exception()
        if failure is not None:
            raise failure

    async def _read(self) -> None:
        while self._reader.terminal or self._questions:
            self._reading = True
            try:
                line = await self._reader.readline("")
            finally:
                self._reading = False
            if self._questions:
                self._answer(self._questions.popleft(), line)
            elif isinstance(line, str):
                await self._act(line)
            elif line is ReadEnd.EOF:
                self.leave = True
                _out("\n  (end of input: leaving when this turn ends)\n")
            if self._task is not asyncio.current_task():
                return  # closed while acting on the line

    def _answer(self, request: ApprovalRequested, answer: str | ReadEnd) -> None:
        if isinstance(answer, ReadEnd):
            _out(f"\n  ({answer.value}: denied)")
        decision = parse_decision(answer if isinstance(answer, str) else None)
        self._interpreter.approve(request.approval_id, decision)
        if self._questions:
            _out(approval_question(self._questions[0]) + APPROVAL_PROMPT)

    async def _act(self, line: str) -> None:
        parts = line.split()
        if not parts:
            return
        try:
            if parts[0].lower() == "/quit":
                self.leave = True
                await self._interpreter.stop()
            elif line.lstrip().startswith(BLOCK):
                block = await read_block(self._reader, line)
                if isinstance(block, str):
                    await self._interpreter.send(block)
                    _out("\n  (sent: the agent reads it next)\n")
            elif parts[0].startswith("/"):
                _out("\n")
                await _command(parts[0], parts[1:], self._interpreter, self._manager)
            else:
                await self._interpreter.send(line)
                _out("\n  (sent: the agent reads it next)\n")
        except UserError as exc:
            _out(f"\n  ! {exc}\n")
