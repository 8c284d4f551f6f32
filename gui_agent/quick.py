"""Build a working interpreter in one call, and a synchronous wrapper for scripts."""

from __future__ import annotations

import asyncio
import difflib
import inspect
import os
import tempfile
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path

from gui_agent.agents import AgentDeps, Architecture, default_architectures
from gui_agent.agents.roles import parse_role
from gui_agent.approvals import decision_of
from gui_agent.exceptions import ConfigError, InvalidRequest, UserError
from gui_agent.hooks import AgentHooks
from gui_agent.interpreter import Interpreter
from gui_agent.llm import LLMProvider
from gui_agent.memory import SlidingWindowMemory
from gui_agent.session import Session
from gui_agent.store.base import SessionStore as Store
from gui_agent.tools import (
    TASK_COMPLETE,
    PermissionPolicy,
    Tool,
    ToolRegistry,
    default_tools,
    task_complete,
)
from schema import (
    AgentName,
    ApprovalDecision,
    ApprovalRequested,
    AutoChatSettings,
    Event,
    PermissionMode,
    SessionSettings,
)


def create_interpreter(
    model: LLMProvider,
    *,
    tools: Iterable[Tool] = (),
    builtin_tools: bool = True,
    agent: AgentName | str | None = None,
    system_prompt: str | None = None,
    workdir: str | os.PathLike[str] | None = None,
    permissions: Mapping[str, PermissionMode | str] | None = None,
    autochat: AutoChatSettings | None = None,
    architectures: Mapping[AgentName, Architecture] | None = None,
    hooks: AgentHooks | None = None,
    store: Store | None = None,
) -> Interpreter:
    """One session with your model and tools. Tools that change things ask first by default.

    `agent` is the role the session starts in: one of `architectures` (by default the
    built-in roles), by name (`"planner"`, `AgentName.LLM_PLANNER`), or, when not given,
    the first of them (the executor by default). `workdir` is the folder the session's code
    and file tools work in; without it a temporary folder is made, and deleted when the
    interpreter is closed (or garbage-collected, or the program ends). `builtin_tools=False`
    leaves out run_python and the file tools; `task_complete` (which changes nothing: the
    agent calls it to say the goal is reached) stays unless `tools` has one of that name.
    `store` keeps the session and its messages; the session is added to it before its
    first write.
    `permissions` names
    tools of this interpreter: a name that is none of them is a ConfigError, since a rule
    for a misspelt tool would silently do nothing.
    """
    roles = architectures or default_architectures()
    role = next(iter(roles)) if agent is None else parse_role(str(agent), roles)
    registry = default_tools() if builtin_tools else ToolRegistry()
    for extra in tools:
        registry.add(extra)
    if TASK_COMPLETE not in registry.names:
        # How the agent says the goal is reached: AutoChat's way to finish early (its
        # prompt asks for it), whichever tools act on the world. It changes nothing.
        registry.add(task_complete)
    policy = PermissionPolicy(permissions)  # (checks the modes first)
    _check_tool_names(policy.modes, registry.names)
    settings = SessionSettings()
    if system_prompt is not None:
        settings = settings.model_copy(update={"system_prompt": system_prompt})
    session = Session(settings=settings, agent=role, autochat=autochat or AutoChatSettings())
    temporary = None if workdir is not None else Path(tempfile.mkdtemp(prefix="gui-agent-"))
    session.workdir = Path(workdir) if workdir is not None else temporary
    deps = AgentDeps(
        provider=model,
        tools=registry,
        permissions=policy,
        memory=SlidingWindowMemory(),
        hooks=hooks or AgentHooks(),
    )
    interpreter = Interpreter(
        session, deps, architectures=roles, store=store, new_in_store=store is not None
    )
    if temporary is not None:
        interpreter.remove_when_closed(temporary)
    return interpreter


def _check_tool_names(named: Iterable[str], tools: Iterable[str]) -> None:
    """ConfigError for a permission naming no tool of the interpreter (a typo in a deny
    rule would otherwise leave the tool running), with the closest names."""
    known = list(tools)
    for name in named:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=3)
            hint = f"; did you mean {', '.join(map(repr, close))}?" if close else ""
            raise ConfigError(
                f"permissions name {name!r}, which is no tool here{hint} "
                f"(tools: {', '.join(known) or 'none'})"
            )


def chat_sync(
    interpreter: Interpreter,
    text: str,
    *,
    approve: Callable[
        [ApprovalRequested], ApprovalDecision | str | Awaitable[ApprovalDecision | str]
    ]
    | None = None,
) -> list[Event]:
    """Run one message to the end from synchronous code; refuses inside a running loop.

    Approval requests go to `approve`, which returns the decision (or its value, such as
    "allow_once"; it may be an async function). Without it nobody can answer them, so they
    are denied at once (the model is told it was refused by policy) rather than waiting out
    the approval timeout. An answer that is no decision is InvalidRequest, raised here; the
    turn is stopped, and the call it was about is not run."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        pass
    else:
        raise UserError("chat_sync() cannot run inside an event loop; use `async for` over chat()")

    async def collect() -> list[Event]:
        events: list[Event] = []
        async for event in interpreter.chat(text):
            events.append(event)
            if isinstance(event, ApprovalRequested):
                if approve is None:
                    interpreter.approve(
                        event.approval_id,
                        ApprovalDecision.DENY,
                        "nobody to ask: chat_sync() was given no approve function",
                        by="policy",
                    )
                else:
                    try:
                        answer = approve(event)
                        if inspect.isawaitable(answer):
                            answer = await answer
                    except BaseException as exc:  # said as the turn's end, not "by the user"
                        await interpreter.stop(
                            f"the approve function failed: {type(exc).__name__}: {exc}"
                        )
                        raise
                    try:
                        decision = decision_of(answer)
                    except InvalidRequest:
                        await interpreter.stop("the approve function gave no decision")
                        raise
                    interpreter.approve(event.approval_id, decision)
        return events

    return asyncio.run(collect())
