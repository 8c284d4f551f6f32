"""The terminal chat: the event stream printed readably, approvals asked inline.

Ctrl-C stops the running turn (not the program); at the prompt it exits. Commands:
/stop, /auto on|off, /role NAME, /model NAME, /window, /quit.
"""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from gui_agent.cli import LineReader, install_interrupt
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

HELP = "commands: /stop /auto on|off /role NAME /model NAME /window /quit"


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


def _out(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


async def run_repl(
    models: tuple[str, ...], *, probe: bool, workdir: Path | None, auto: bool
) -> int:
    from connectors.registry import resolve_models
    from gui_agent.store import MemoryStore, default_data_dir

    registry = await resolve_models(explicit=models, probe_local=probe)
    root = workdir or (default_data_dir() / "workspaces")
    manager = SessionManager(
        models=registry,
        store=MemoryStore(),
        workspace_root=root,
        hooks=tracing_from_env(os.environ),
    )
    await manager.start()
    interpreter = await manager.create("local")
    if auto:
        await interpreter.update(
            autochat=interpreter.session.autochat.model_copy(update={"enabled": True})
        )
    loop = asyncio.get_running_loop()
    reader = LineReader(loop)
    quit_requested = asyncio.Event()

    def on_interrupt() -> None:
        if interpreter.busy:
            _out("\n  (stopping…)\n")
            loop.create_task(interpreter.stop())  # noqa: RUF006 - awaited via wait_idle below
        else:
            quit_requested.set()
            reader.interrupt()

    install_interrupt(loop, on_interrupt)
    _out(f"model: {registry.default}   {HELP}\n")
    try:
        while not quit_requested.is_set():
            line = await reader.readline("\nyou> ")
            if line is None or line.strip() == "/quit":
                break
            if await _command(line, interpreter, manager):
                continue
            if not line.strip():
                continue
            await _turn(interpreter, reader, line)
    finally:
        await manager.close()
    _out("\n")
    return 0


async def _command(line: str, interpreter: Interpreter, manager: SessionManager) -> bool:
    parts = line.strip().split()
    if not parts or not parts[0].startswith("/"):
        return False
    name, args = parts[0], parts[1:]
    if name == "/stop":
        await interpreter.stop()
    elif name == "/auto" and args:
        enabled = args[0] == "on"
        await interpreter.update(
            autochat=interpreter.session.autochat.model_copy(update={"enabled": enabled})
        )
        _out(f"AutoChat {'on' if enabled else 'off'}\n")
    elif name == "/role" and args:
        await interpreter.set_agent(AgentName(args[0].upper()))
    elif name == "/model" and args:
        await manager.set_model(interpreter, args[0])
    elif name == "/window":
        window = interpreter.window()
        _out(f"{len(window.messages)} messages, {window.token_count} tokens in the window\n")
    else:
        _out(HELP + "\n")
    return True


async def _turn(interpreter: Interpreter, reader: LineReader, line: str) -> None:
    async with interpreter.subscribe() as events:
        await interpreter.send(line)
        async for event in events.until_idle():
            text = format_event(event)
            if text:
                _out(text)
            if isinstance(event, ApprovalRequested):
                _out(f"\n  ? {event.summary}\n{event.detail}\n")
                answer = await reader.readline("  allow? [y]es once / [s]ession / [N]o: ")
                decision = {
                    "y": ApprovalDecision.ALLOW_ONCE,
                    "s": ApprovalDecision.ALLOW_SESSION,
                }.get((answer or "").strip().lower()[:1], ApprovalDecision.DENY)
                interpreter.approve(event.approval_id, decision)
