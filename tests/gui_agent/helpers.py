"""Shared test helpers: build interpreters on offline models, wait on events."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path

from connectors.scripted import ScriptedModel, ScriptedReply, call
from gui_agent.events import Subscription
from gui_agent.interpreter import Interpreter
from gui_agent.llm import LLMProvider, StaticCatalog
from gui_agent.manager import SessionManager
from gui_agent.quick import create_interpreter
from gui_agent.store import MemoryStore
from gui_agent.tools import Tool
from schema import ApprovalDecision, ApprovalRequested, AutoChatSettings, Event, PermissionMode


def make(
    tmp_path: Path,
    replies: Iterable[ScriptedReply] | LLMProvider = (),
    *,
    tools: Iterable[Tool] = (),
    delay_s: float = 0.0,
    permissions: dict[str, PermissionMode] | None = None,
    autochat: AutoChatSettings | None = None,
) -> tuple[Interpreter, LLMProvider]:
    model = replies if isinstance(replies, LLMProvider) else ScriptedModel(replies, delay_s=delay_s)
    interpreter = create_interpreter(
        model, tools=tools, workdir=tmp_path, permissions=permissions, autochat=autochat
    )
    return interpreter, model


def running_code(tmp_path: Path, code: str, then: str) -> Interpreter:
    """An interpreter whose model calls run_python with `code` (allowed without asking), then
    answers `then`."""
    interpreter, _ = make(
        tmp_path,
        [call("run_python", code=code), then],
        permissions={"run_python": PermissionMode.ALLOW},
    )
    return interpreter


def scripted_manager(tmp_path: Path, reply: str = "hi") -> SessionManager:
    """A session manager on the scripted model (it answers `reply`), kept in memory, with its
    chats' folders under `tmp_path`."""
    return SessionManager(
        models=StaticCatalog(ScriptedModel(default=reply)),
        store=MemoryStore(),
        workspace_root=tmp_path,
    )


async def next_event(sub: Subscription, predicate: Callable[[Event], bool]) -> Event:
    """The first event from `sub` that matches; fails if the run ends first."""
    async for event in sub.until_idle():
        if predicate(event):
            return event
    raise AssertionError("the run ended before the expected event")


def of_type(events: Iterable[Event], kind: str) -> list[Event]:
    return [e for e in events if e.type == kind]


async def answered(
    interpreter: Interpreter, text: str, decision: ApprovalDecision, note: str | None = None
) -> list[Event]:
    """Send `text`, answer the turn's first approval request with `decision` (and `note`),
    and return the events from the answer to the end of the turn."""
    async with interpreter.subscribe() as sub:
        await interpreter.send(text)
        request = await next_event(sub, lambda e: isinstance(e, ApprovalRequested))
        assert isinstance(request, ApprovalRequested)
        assert interpreter.approve(request.approval_id, decision, note)
        return [e async for e in sub.until_idle()]
