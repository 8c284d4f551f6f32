"""Run one tool call and turn every outcome, failures included, into a `ToolResult`.

Errors are data: the model reads them and tries again. Only cancellation (Stop) propagates.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import dataclasses
import decimal
import enum
import inspect
import json
import logging
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from gui_agent.eager import start
from gui_agent.exceptions import PathEscape
from gui_agent.log_text import loggable, loggable_failure, loggable_traceback
from gui_agent.tools.definition import Tool, ToolContext, ToolOutput
from gui_agent.tools.registry import ToolRegistry
from schema import ToolCall, ToolResult, valid_text
from schema.builders import builder

logger = logging.getLogger(__name__)

_result = builder(ToolResult)  # a result, as the class builds it (see `schema.builders`)
_MAX_ERRORS_SHOWN = 10


def _truncate(text: str, limit: int) -> tuple[str, bool]:
    if len(text) <= limit:
        return text, False
    return f"{text[:limit]}\n…[truncated {len(text) - limit} characters]", True


def _error(call: ToolCall, message: str, started: float) -> ToolResult:
    if _stop_caught():
        raise asyncio.CancelledError  # the Stop, caught by the tool and turned into an error
    return ToolResult(
        call_id=call.id,
        name=call.name,
        content=message,
        is_error=True,
        duration_ms=(time.perf_counter() - started) * 1000,
    )


def _describe_validation(tool: Tool, error: ValidationError) -> str:
    lines = [f"Invalid arguments for {tool.name}:"]
    for item in error.errors()[:_MAX_ERRORS_SHOWN]:
        where = ".".join(str(part) for part in item["loc"]) or "(arguments)"
        message = item["msg"]
        if item["type"] == "extra_forbidden":
            message = "unexpected argument"
        elif item["type"] != "missing":
            shown = json.dumps(item.get("input"), ensure_ascii=False, default=str)
            message = f"{message} (got {shown[:80]})"
        lines.append(f"- {where}: {message}")
    hidden = error.error_count() - _MAX_ERRORS_SHOWN
    if hidden > 0:
        lines.append(f"- … and {hidden} more")
    accepted = ", ".join(tool.parameters.get("properties", {})) or "none"
    lines.append(f"Accepted arguments: {accepted}.")
    return "\n".join(lines)


def _json_default(value: Any) -> Any:
    """What JSON holds for a value inside a result that json cannot write itself: a pydantic
    model or a dataclass as its fields, an enum as its value, a set as a list; anything
    else as its text. (json encodes what this returns in turn.)"""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, set | frozenset):
        return list(value)
    return str(value)


MAX_METADATA_DEPTH = 64
"""How deeply a tool's metadata may nest. Deeper, a value is not kept (a note says so): the
event stream's and the store's JSON readers refuse documents past 200 levels, and one such
value would leave the session unsaveable and its streams broken."""

MAX_METADATA_CHARS = 1_000_000
"""How long a tool's metadata may be as JSON; longer, only a note is kept."""


def _json_safe(tool: Tool, metadata: dict[str, Any]) -> dict[str, Any]:
    """A tool's `ToolOutput.metadata` as plain JSON values (see `_json_default`): it is kept
    in the message and sent in events, and one value JSON cannot hold would make the whole
    session impossible to save. A value nested deeper than `MAX_METADATA_DEPTH`, or
    metadata longer than `MAX_METADATA_CHARS`, is replaced by a note."""
    try:
        text = json.dumps(metadata, ensure_ascii=False, default=_json_default)
        safe = json.loads(text)
    except Exception as error:  # keys that are not text, cycles, a value that cannot print
        logger.warning(
            "tool %s: metadata is not JSON (%s); kept as text", tool.name, loggable(error)
        )
        return {_printed(key): _printed(value) for key, value in metadata.items()}
    if not isinstance(safe, dict):
        return {}
    if len(text) > MAX_METADATA_CHARS:
        logger.warning("tool %s: metadata of %d characters not kept", tool.name, len(text))
        return {"not_kept": f"the tool's metadata ({len(text):,} characters) is too long to keep"}
    for key, value in safe.items():
        if _deeper_than(value, MAX_METADATA_DEPTH - 1):
            logger.warning("tool %s: metadata %r nests too deeply; not kept", tool.name, key)
            safe[key] = f"(not kept: nested more than {MAX_METADATA_DEPTH} levels deep)"
    return safe


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether JSON `value` nests more than `limit` levels of lists and objects."""
    level: list[Any] = [value]  # the nodes at one depth; a container nests one level more
    for _ in range(limit):
        level = [
            item
            for node in level
            if isinstance(node, dict | list)
            for item in (node.values() if isinstance(node, dict) else node)
        ]
        if not any(isinstance(node, dict | list) for node in level):
            return False
    return True


def _printed(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return repr(value)
    except Exception:
        return f"<{type(value).__name__}>"


def _to_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if type(value) is int:  # what json.dumps writes, without its machinery
        try:
            return str(value)
        except ValueError:  # past Python's 4,300-digit limit (a factorial tool): decimal's
            return str(decimal.Decimal(value))  # conversion has no such limit and is fast
    try:
        if isinstance(value, BaseModel):
            return value.model_dump_json()
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = dataclasses.asdict(value)
        return json.dumps(value, ensure_ascii=False, default=_json_default)
    except (TypeError, ValueError, RecursionError) as error:
        # Not JSON (tuple keys, a value that contains itself, a field that cannot be
        # copied): the tool did its work, so its result is shown as Python writes it.
        logger.debug(
            "tool result of type %s is not JSON (%s)", type(value).__name__, loggable(error)
        )
        return repr(value)


class _Unshowable(Exception):
    """A tool's return value could not be turned into text; the message says which."""


def _result_text(tool: Tool, value: Any) -> str:
    """`value` as text, or `_Unshowable` (never a failure the tool would be blamed for)."""
    try:
        return _to_text(value)
    except (asyncio.CancelledError, GeneratorExit):
        raise
    except Exception as error:
        raise _Unshowable(
            f"{tool.name} ran, but its result (a {type(value).__name__}) could not be "
            f"turned into text: {type(error).__name__}: {error}. Do not run it again only to "
            "see the result."
        ) from error


async def _in_daemon_thread(function: Callable[[], Any]) -> Any:
    """Run a sync function in a daemon thread; the awaiting side can be cancelled.

    Like `asyncio.to_thread`, but a thread that never returns (a tool stuck in `input()`)
    neither holds a slot of the loop's default executor nor blocks interpreter shutdown.
    Python threads cannot be killed: after a timeout the thread runs on until it returns,
    and its result is dropped.
    """
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()
    context = contextvars.copy_context()

    def settle(ok: bool, value: Any) -> None:
        if future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def work() -> None:
        try:
            value = context.run(function)
        except BaseException as error:  # handed to the awaiting task, not swallowed
            outcome = (False, error)
        else:
            outcome = (True, value)
        try:
            loop.call_soon_threadsafe(settle, *outcome)
        except RuntimeError:  # the loop closed while the tool ran on
            logger.debug("tool thread finished after its event loop closed")

    threading.Thread(target=work, name="gui-agent-tool", daemon=True).start()
    return await future


def _from_thread(sink: Callable[[str, str], None]) -> Callable[[str, str], None]:
    """`sink` (which runs on the event loop) for a sync tool's `ctx.show`, called from its
    worker thread: handed to the loop in order, before the tool's result. Showing never
    fails the tool, even once the loop has closed."""
    loop = asyncio.get_running_loop()

    def hand_over(call_id: str, text: str) -> None:
        try:
            loop.call_soon_threadsafe(sink, call_id, text)
        except RuntimeError:  # the loop closed while the tool ran on
            logger.debug("tool output after its event loop closed was dropped")

    return hand_over


async def _invoke(tool: Tool, args: list[Any], kwargs: dict[str, Any]) -> Any:
    if tool.is_async:
        return await tool.function(*args, **kwargs)
    result = await _in_daemon_thread(lambda: tool.function(*args, **kwargs))
    if inspect.isawaitable(result):  # a sync callable that returned a coroutine
        result = await result
    return result


async def execute_tool(registry: ToolRegistry, call: ToolCall, ctx: ToolContext) -> ToolResult:
    """Run `call` with the tool of that name from `registry`.

    Never raises, except `asyncio.CancelledError` when the task running it is cancelled
    (Stop), which propagates untouched, also when the tool caught it and returned or raised
    something else (`_stop_caught`); a CancelledError the tool raises by itself (a task
    it awaited was cancelled) is its failure, reported like any other. Unknown tools,
    malformed or invalid arguments, exceptions, timeouts and path escapes all come back as
    `is_error=True` results whose message says what to change. Async tools run on the loop,
    started at once in the caller's task (`gui_agent.eager`); sync tools run in a worker
    thread (which cannot be killed when the timeout fires).
    """
    started = time.perf_counter()
    tool = registry.get(call.name)
    if tool is None:
        available = ", ".join(registry.names) or "(none)"
        return _error(call, f"Unknown tool {call.name!r}. Available tools: {available}.", started)

    if not tool.is_async and ctx.output_sink is not None:  # `show` from its worker thread
        ctx = dataclasses.replace(ctx, output_sink=_from_thread(ctx.output_sink))
    bound = _bind(tool, call, ctx)
    if isinstance(bound, str):
        return _error(call, bound, started)
    args, kwargs = bound

    logger.debug("running tool %s (call %s)", tool.name, call.id)
    deadline: asyncio.Timeout | None = None
    try:
        begun = start(_invoke(tool, args, kwargs))
        if begun.done:  # it never waited, so no timer could have stopped it: none was set
            value = begun.result()
        else:  # it waits: from here on the timeout can interrupt it, counted from the start
            limit = tool.timeout_s
            if limit is None:
                deadline = asyncio.timeout(None)
            else:
                left = limit - (time.perf_counter() - started)
                deadline = asyncio.timeout_at(asyncio.get_running_loop().time() + left)
            async with deadline:
                value = await begun.rest()
        if deadline is not None and _stop_caught():
            raise asyncio.CancelledError  # the Stop, caught by the tool, which then returned
        output = value if isinstance(value, ToolOutput) else None
        content, truncated = _truncate(
            valid_text(_result_text(tool, value) if output is None else output.content),
            tool.max_output_chars,
        )
    except TimeoutError as error:
        if deadline is None or not deadline.expired():
            return _error(call, f"{tool.name} raised TimeoutError: {error}", started)
        logger.info("tool %s timed out after %ss", tool.name, tool.timeout_s)
        return _error(
            call,
            f"{tool.name} timed out after {tool.timeout_s:g}s and was abandoned. "
            "Try a smaller or faster request.",
            started,
        )
    except PathEscape as error:
        return _error(call, f"path escapes the session folder: {error}", started)
    except _Unshowable as error:
        return _error(call, str(error), started)
    except GeneratorExit:
        raise  # the coroutine being closed: not the tool's failure
    except asyncio.CancelledError as error:
        if _cancelled_from_outside():
            raise  # a Stop, or a parallel call being ended: it must reach the turn
        # The tool's own: something it awaited was cancelled (a task of its own, a
        # library's). Not a Stop, so the model is told, and the turn goes on.
        logger.info(
            "tool %s raised CancelledError by itself: %s", tool.name, loggable_traceback(error)
        )
        detail = str(error) or "something it waited for was cancelled"
        return _error(call, f"{tool.name} raised CancelledError: {detail}", started)
    except BaseException as error:  # anything a tool raises, KeyboardInterrupt included, is data
        logger.info("tool %s raised %s", tool.name, loggable_failure(error))
        detail = str(error) or "(no message)"
        return _error(call, f"{tool.name} raised {type(error).__name__}: {detail}", started)

    if output is None:  # (built as `schema.builders` says: every call of a tool ends here)
        return _result(
            {
                "call_id": call.id,
                "name": tool.name,
                "content": content,
                "truncated": truncated,
                "duration_ms": (time.perf_counter() - started) * 1000,
            }
        )
    return ToolResult(
        call_id=call.id,
        name=tool.name,
        content=content,
        is_error=output.is_error,
        truncated=truncated,
        duration_ms=(time.perf_counter() - started) * 1000,
        message_type=output.message_type,
        images=output.images,
        metadata=_json_safe(tool, output.metadata) if output.metadata else {},
    )


def _stop_caught() -> bool:
    """Whether the task running the tool is being cancelled although the tool returned or
    raised something else: the tool caught the CancelledError of a Stop (`except
    BaseException:`, a library's cleanup). The Stop must still end the turn; without this
    the turn went on to its next model call. (A timeout of the tool's own is taken back
    before this is asked: `asyncio.timeout` uncancels the task as it exits.)"""
    task = asyncio.current_task()
    return task is not None and task.cancelling() > 0


def _cancelled_from_outside() -> bool:
    """Whether the task running the tool is being cancelled (Stop, the end of a parallel
    call, the interpreter closing), as opposed to the tool raising CancelledError itself."""
    task = asyncio.current_task()
    return task is None or task.cancelling() > 0


def decode_arguments(raw: str) -> Any:
    """The JSON value of a call's arguments (empty means `{}`); an object encoded twice, as
    some models and chat templates write it, is decoded once more (told that it is text,
    such a model would write it the same way every time and never get its call run).
    Raises `json.JSONDecodeError`."""
    value = json.loads(raw or "{}")
    if isinstance(value, str) and value.lstrip().startswith("{"):
        with contextlib.suppress(json.JSONDecodeError):
            return json.loads(value)
    return value


class _BadArguments(Exception):
    """The arguments a model wrote cannot be used; the message says why, for the model."""


def _bind_explained(
    tool: Tool, call: ToolCall, ctx: ToolContext
) -> tuple[list[Any], dict[str, Any]]:
    try:
        arguments = decode_arguments(call.arguments)
    except json.JSONDecodeError as error:
        raise _BadArguments(
            f"Arguments for {tool.name} are not valid JSON ({error}). "
            "Send the arguments as one JSON object."
        ) from None
    if not isinstance(arguments, dict):
        raise _BadArguments(
            f"Arguments for {tool.name} must be a JSON object, not {type(arguments).__name__}."
        )
    try:
        return tool.bind(arguments, ctx)
    except ValidationError as error:
        raise _BadArguments(_describe_validation(tool, error)) from None


def _bind(tool: Tool, call: ToolCall, ctx: ToolContext) -> tuple[list[Any], dict[str, Any]] | str:
    """The arguments to call `tool` with, or what is wrong with those the model wrote."""
    try:
        return tool.bind_json(call.arguments or "{}", ctx)
    except (ValidationError, ValueError):
        # Rare: parse again step by step to say exactly what is wrong.
        try:
            return _bind_explained(tool, call, ctx)
        except _BadArguments as error:
            return str(error)


def argument_error(tool: Tool, call: ToolCall) -> str | None:
    """What is wrong with the arguments of `call` to `tool`, as `execute_tool` would tell
    the model, or None when they would bind. Checked before anyone is asked to allow the
    call: a call that cannot run is answered at once, and the model learns why."""
    ctx = ToolContext(session_id="", run_id="", call_id=call.id, workdir=Path.cwd())
    bound = _bind(tool, call, ctx)
    return bound if isinstance(bound, str) else None
