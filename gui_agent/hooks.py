"""Lifecycle hooks: subclass `AgentHooks` and override what you need; every method is a no-op."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from gui_agent.log_text import loggable_traceback
from schema import Message, ModelResponse, ToolCall, ToolResult

if TYPE_CHECKING:
    from gui_agent.session import Session

logger = logging.getLogger(__name__)


class AgentHooks:
    """Called around a turn, each model call and each tool call. Exceptions in hooks are logged."""

    async def on_start(self, session: Session, prompt: Message) -> None:
        return None

    async def on_llm_start(self, session: Session, messages: list[Message]) -> None:
        return None

    async def on_llm_end(self, session: Session, response: ModelResponse) -> None:
        return None

    async def on_tool_start(self, session: Session, call: ToolCall) -> None:
        return None

    async def on_tool_end(self, session: Session, result: ToolResult) -> None:
        return None

    async def on_end(self, session: Session, outcome: str) -> None:
        return None

    async def on_error(self, session: Session, error: BaseException) -> None:
        return None


_HOOK_NAMES = (
    "on_start",
    "on_llm_start",
    "on_llm_end",
    "on_tool_start",
    "on_tool_end",
    "on_end",
    "on_error",
)


def has_hooks(hooks: AgentHooks) -> bool:
    """True when `hooks` overrides any hook. Callers skip the calls (a coroutine each, a few
    per model and tool call) for the plain no-op `AgentHooks`."""
    cls = type(hooks)
    return any(getattr(cls, name) is not getattr(AgentHooks, name) for name in _HOOK_NAMES) or any(
        name in vars(hooks) for name in _HOOK_NAMES
    )


_PASSED_ON = (asyncio.CancelledError, KeyboardInterrupt, SystemExit, GeneratorExit)
"""What a hook may raise and have passed on: what stops a turn (Stop) or the program."""


async def call_hook(awaitable: Awaitable[None]) -> None:
    """Await a hook; a hook that raises is logged and does not break the turn. That holds
    for a `BaseException` of the hook's own too (not an `Exception`, not one of
    `_PASSED_ON`): it would otherwise end the turn's task with nothing to report it."""
    try:
        await awaitable
    except _PASSED_ON:
        raise
    except BaseException as error:
        logger.error("a lifecycle hook failed: %s", loggable_traceback(error))
