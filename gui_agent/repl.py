"""The terminal chat: the event stream printed readably, approvals asked inline.

Ctrl-C stops the running turn (not the program), also while an approval is asked. At the
prompt, Ctrl-C only says how to leave; a second one in a row leaves, so pressing it twice to
stop a reply never ends the chat. Ctrl-D (end of input) leaves at the prompt and denies at an
approval question; on a terminal the chat then goes on, from a pipe it is the end.
A mistyped command prints one line saying what is accepted; the chat goes on.
Commands: /stop, /auto on|off, /role NAME, /model NAME, /window, /help, /quit.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Final

from gui_agent.cli import LineReader, ReadEnd, install_interrupt, write_out
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

HELP = "commands: /stop /auto on|off /role NAME /model NAME /window /help /quit"
KEYS = "keys: Ctrl-C stops the reply (at the prompt: press twice to leave), Ctrl-D leaves"
LEAVE_HINT = "  (Ctrl-C again, Ctrl-D or /quit leaves the chat)"
APPROVAL_PROMPT = "  allow? [y]es once / [s]ession / [N]o: "
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
        return f"\n  ↻ AutoChat stopped: {event.reason.value} {event.detail}\n"
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


def parse_decision(answer: str | None) -> ApprovalDecision:
    """`y` allows once, `s` for the session; anything else, or end of input, denies."""
    choice = (answer or "").strip().lower()[:1]
    if choice == "y":
        return ApprovalDecision.ALLOW_ONCE
    if choice == "s":
        return ApprovalDecision.ALLOW_SESSION
    return ApprovalDecision.DENY


_out = write_out


async def run_repl(
    models: tuple[str, ...],
    *,
    probe: bool,
    workdir: Path | None,
    auto: bool,
    source: str = "--model flag",
) -> int:
    """Chat in the terminal until /quit. The tools work in `workdir` itself when given, else
    in a new folder under the data folder. `source` says where `models` were named."""
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
        await _converse(interpreter, manager)
    finally:
        await manager.close()
    _out("\n")
    return 0


async def _converse(interpreter: Interpreter, manager: SessionManager) -> None:
    """Read lines until /quit, end of input or Ctrl-C twice in a row at the prompt."""
    loop = asyncio.get_running_loop()
    reader = LineReader(loop)
    stopping: set[asyncio.Task[bool]] = set()

    def on_interrupt() -> None:
        if interpreter.busy:
            _out("\n  (stopping…)\n")
            task = loop.create_task(interpreter.stop())
            stopping.add(task)
            task.add_done_callback(stopping.discard)
        else:
            reader.interrupt()

    install_interrupt(loop, on_interrupt)
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
                await _handle(line, interpreter, manager, reader)
            except UserError as exc:
                _out(f"  ! {exc}\n")
    finally:
        await asyncio.gather(*stopping)


async def _handle(
    line: str, interpreter: Interpreter, manager: SessionManager, reader: LineReader
) -> None:
    parts = line.split()
    if not parts:
        return
    if parts[0].startswith("/"):
        # a command may start a turn (/auto on after a reply): it is shown like any other
        await _follow(interpreter, reader, _command(parts[0], parts[1:], interpreter, manager))
    else:
        await _follow(interpreter, reader, interpreter.send(line))


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


async def _auto(args: list[str], interpreter: Interpreter, manager: SessionManager) -> None:
    if len(args) != 1 or args[0].lower() not in ("on", "off"):
        raise InvalidRequest("usage: /auto on|off")
    enabled = args[0].lower() == "on"
    await interpreter.update(
        autochat=interpreter.session.autochat.model_copy(update={"enabled": enabled})
    )
    _out(f"AutoChat {'on' if enabled else 'off'}\n")


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
    _out(f"{HELP}\n{KEYS}\n")


COMMANDS: Final[Mapping[str, Command]] = {
    "/stop": _stop,
    "/auto": _auto,
    "/role": _role,
    "/model": _model,
    "/window": _window,
    "/help": _help,
}


async def _follow(interpreter: Interpreter, reader: LineReader, action: Awaitable[object]) -> None:
    """Do `action`; if a turn is running after it, print its events until the session is
    idle. Approval questions are asked beside the stream, so a stop or a timeout ends the
    question too."""
    questions = _ApprovalQuestions(interpreter, reader)
    async with interpreter.subscribe() as events:
        await action
        if not interpreter.busy:
            return
        try:
            async for event in events.until_idle():
                text = format_event(event)
                if text:
                    _out(text)
                if isinstance(event, ApprovalRequested):
                    questions.ask(event)
                elif isinstance(event, ApprovalResolved):
                    await questions.withdraw(event.approval_id)
        finally:
            await questions.close()


class _ApprovalQuestions:
    """The approval questions of one turn, asked one at a time. Each is a task this object
    owns; a question whose request was settled another way (stop, timeout) is withdrawn."""

    def __init__(self, interpreter: Interpreter, reader: LineReader) -> None:
        self._interpreter = interpreter
        self._reader = reader
        self._one_at_a_time = asyncio.Lock()
        self._asking: dict[str, asyncio.Task[None]] = {}

    def ask(self, request: ApprovalRequested) -> None:
        task = asyncio.create_task(self._ask(request))
        self._asking[request.approval_id] = task

    async def withdraw(self, approval_id: str) -> None:
        task = self._asking.pop(approval_id, None)
        if task is not None:
            await _cancel(task)

    async def close(self) -> None:
        for approval_id in list(self._asking):
            await self.withdraw(approval_id)

    async def _ask(self, request: ApprovalRequested) -> None:
        async with self._one_at_a_time:
            _out(f"\n  ? {request.summary}\n{request.detail}\n")
            answer = await self._reader.readline(APPROVAL_PROMPT)
            if isinstance(answer, ReadEnd):
                _out(f"\n  ({answer.value}: denied)")
            decision = parse_decision(answer if isinstance(answer, str) else None)
            self._interpreter.approve(request.approval_id, decision)


async def _cancel(task: asyncio.Task[None]) -> None:
    """Cancel a task we own and wait for it; our own cancellation still propagates."""
    task.cancel()
    await asyncio.wait({task})
    failure = None if task.cancelled() else task.exception()
    if failure is not None:
        raise failure
