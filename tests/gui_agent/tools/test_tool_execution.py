"""execute_tool: every outcome is a ToolResult the model can act on; only Stop propagates."""

from __future__ import annotations

import asyncio
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from gui_agent.exceptions import ToolDefinitionError
from gui_agent.tools import ToolContext, ToolOutput, ToolRegistry, execute_tool, tool
from schema import ImagePart, MessageType, ToolCall


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(session_id="s1", run_id="r1", call_id="c1", workdir=tmp_path)


def call(name: str, arguments: Any = None, raw: str | None = None) -> ToolCall:
    text = raw if raw is not None else json.dumps(arguments or {})
    return ToolCall(id="call-1", name=name, arguments=text)


@tool
def add(a: int, b: int = 1) -> int:
    """Add two numbers."""
    return a + b


@tool
async def whoami(ctx: ToolContext, greeting: str) -> str:
    """Say hello from the session."""
    await asyncio.sleep(0)
    return f"{greeting} from {ctx.session_id}/{ctx.call_id}"


async def test_sync_and_async_tools_return_their_value(ctx: ToolContext) -> None:
    registry = ToolRegistry([add, whoami])
    summed = await execute_tool(registry, call("add", {"a": 2, "b": 3}), ctx)
    assert (summed.content, summed.is_error, summed.call_id, summed.name) == (
        "5",
        False,
        "call-1",
        "add",
    )
    assert summed.duration_ms >= 0
    hello = await execute_tool(registry, call("whoami", {"greeting": "hi"}), ctx)
    assert hello.content == "hi from s1/c1"
    assert hello.message_type is MessageType.FUNCTION


async def test_return_values_are_mapped_to_text(ctx: ToolContext) -> None:
    class Weather(BaseModel):
        city: str
        celsius: float

    @dataclass
    class Pair:
        left: int
        right: int

    @tool
    def model() -> Weather:
        """A pydantic model."""
        return Weather(city="Oslo", celsius=3.5)

    @tool
    def mapping() -> dict[str, object]:
        """A dict."""
        return {"when": Path("a/b"), "n": 1}

    @tool
    def pair() -> Pair:
        """A dataclass."""
        return Pair(1, 2)

    image = ImagePart(data="aGk=")

    @tool
    def rich() -> ToolOutput:
        """A ToolOutput."""
        return ToolOutput(
            "$ ls", message_type=MessageType.CONSOLE, images=(image,), metadata={"k": 1}
        )

    registry = ToolRegistry([model, mapping, pair, rich])
    results = {name: await execute_tool(registry, call(name), ctx) for name in registry.names}
    assert json.loads(results["model"].content) == {"city": "Oslo", "celsius": 3.5}
    assert json.loads(results["mapping"].content) == {"when": "a/b", "n": 1}
    assert json.loads(results["pair"].content) == {"left": 1, "right": 2}
    assert results["rich"].content == "$ ls"
    assert results["rich"].message_type is MessageType.CONSOLE
    assert results["rich"].images == (image,)
    assert results["rich"].metadata == {"k": 1}


async def test_invalid_arguments_name_the_field_and_the_problem(ctx: ToolContext) -> None:
    registry = ToolRegistry([add])
    missing = await execute_tool(registry, call("add", {"b": 2}), ctx)
    assert missing.is_error
    assert "Invalid arguments for add" in missing.content
    assert "- a: Field required" in missing.content

    wrong_type = await execute_tool(registry, call("add", {"a": "seven"}), ctx)
    assert wrong_type.is_error
    assert "- a: Input should be a valid integer" in wrong_type.content
    assert '"seven"' in wrong_type.content

    extra = await execute_tool(registry, call("add", {"a": 1, "c": 2}), ctx)
    assert "- c: unexpected argument" in extra.content
    assert "Accepted arguments: a, b." in extra.content


async def test_malformed_json_and_non_objects_are_reported(ctx: ToolContext) -> None:
    registry = ToolRegistry([add])
    broken = await execute_tool(registry, call("add", raw='{"a": 1,'), ctx)
    assert broken.is_error
    assert broken.content.startswith("Arguments for add are not valid JSON (Expecting")
    listed = await execute_tool(registry, call("add", raw="[1, 2]"), ctx)
    assert listed.is_error
    assert "must be a JSON object, not list" in listed.content
    empty = await execute_tool(registry, call("add", raw=""), ctx)
    assert "- a: Field required" in empty.content


async def test_unknown_tool_lists_the_available_ones(ctx: ToolContext) -> None:
    result = await execute_tool(ToolRegistry([add, whoami]), call("multiply"), ctx)
    assert result.is_error
    assert result.content == "Unknown tool 'multiply'. Available tools: add, whoami."


async def test_an_exception_becomes_an_error_result(ctx: ToolContext) -> None:
    @tool
    def explode(reason: str) -> str:
        """Fail."""
        raise ValueError(f"bad input: {reason}")

    @tool
    async def quits() -> str:
        """Calls sys.exit."""
        raise SystemExit(3)

    @tool
    async def own_timeout() -> str:
        """A tool whose own network call timed out."""
        raise TimeoutError("upstream did not answer")

    registry = ToolRegistry([explode, quits, own_timeout])
    result = await execute_tool(registry, call("explode", {"reason": "x"}), ctx)
    assert result.is_error
    assert result.content == "explode raised ValueError: bad input: x"
    exited = await execute_tool(registry, call("quits"), ctx)
    assert exited.content == "quits raised SystemExit: 3"
    timed = await execute_tool(registry, call("own_timeout"), ctx)
    assert timed.content == "own_timeout raised TimeoutError: upstream did not answer"


async def test_a_hanging_async_tool_times_out(ctx: ToolContext) -> None:
    @tool(timeout_s=0.1)
    async def hang() -> str:
        """Never returns."""
        await asyncio.Event().wait()
        return ""

    result = await execute_tool(ToolRegistry([hang]), call("hang"), ctx)
    assert result.is_error
    assert "hang timed out after 0.1s" in result.content
    assert result.duration_ms >= 100


async def test_a_hanging_sync_tool_times_out_without_blocking_the_loop(ctx: ToolContext) -> None:
    release = threading.Event()

    @tool(timeout_s=0.1)
    def stuck() -> str:
        """Blocks its thread."""
        release.wait(10)
        return "late"

    try:
        result = await execute_tool(ToolRegistry([stuck]), call("stuck"), ctx)
    finally:
        release.set()
    assert result.is_error
    assert "stuck timed out after 0.1s" in result.content


async def test_sync_tools_run_off_the_event_loop(ctx: ToolContext) -> None:
    gate = threading.Event()

    @tool
    def waits_for_loop() -> str:
        """Only finishes if the loop keeps running while it waits."""
        return "loop ran" if gate.wait(5) else "loop was blocked"

    asyncio.get_running_loop().call_soon(gate.set)
    result = await execute_tool(ToolRegistry([waits_for_loop]), call("waits_for_loop"), ctx)
    assert result.content == "loop ran"


async def test_huge_output_is_truncated_with_a_visible_marker(ctx: ToolContext) -> None:
    @tool(max_output_chars=1000)
    def flood() -> str:
        """Ten megabytes of text."""
        return "x" * 10_000_000

    result = await execute_tool(ToolRegistry([flood]), call("flood"), ctx)
    assert result.truncated
    assert not result.is_error
    assert result.content == "x" * 1000 + "\n…[truncated 9999000 characters]"


async def test_cancellation_propagates_and_stops_the_tool(ctx: ToolContext) -> None:
    started = asyncio.Event()
    cleaned_up = asyncio.Event()

    @tool
    async def long_job() -> str:
        """Runs until cancelled."""
        started.set()
        try:
            await asyncio.Event().wait()
        finally:
            cleaned_up.set()
        return ""

    task = asyncio.create_task(execute_tool(ToolRegistry([long_job]), call("long_job"), ctx))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned_up.is_set()


def test_registry_keeps_order_and_refuses_duplicates() -> None:
    registry = ToolRegistry([add])
    registry.add(whoami)
    assert registry.names == ("add", "whoami")
    assert len(registry) == 2
    assert "add" in registry and "nope" not in registry
    assert [t.name for t in registry] == ["add", "whoami"]
    assert registry.get("whoami") is whoami
    assert registry.get("nope") is None
    assert [s.name for s in registry.schemas()] == ["add", "whoami"]
    with pytest.raises(ToolDefinitionError, match="already registered"):
        registry.add(add)

    @tool
    def extra() -> str:
        """Extra."""
        return ""

    bigger = registry.with_tools(extra)
    assert bigger.names == ("add", "whoami", "extra")
    assert registry.names == ("add", "whoami")
    with pytest.raises(ToolDefinitionError, match="already registered"):
        registry.with_tools(add)


async def test_the_timeout_counts_from_the_start_of_the_call(ctx: ToolContext) -> None:
    # A tool busy past its limit before it first waits: the timer can only be set when it
    # waits, but the time spent before counts, so it is stopped at that first wait rather
    # than given a fresh 0.3 s (in which its event would have come).
    loop = asyncio.get_running_loop()
    answer = asyncio.Event()

    @tool(timeout_s=0.3)
    async def slow_start() -> str:
        """Busy, then waits for an answer that comes 0.1 s later."""
        deadline = loop.time() + 0.35
        while loop.time() < deadline:  # busy without yielding to the loop
            pass
        loop.call_later(0.1, answer.set)
        await answer.wait()
        return "answered"

    result = await execute_tool(ToolRegistry([slow_start]), call("slow_start"), ctx)
    assert result.is_error
    assert "slow_start timed out after 0.3s" in result.content


async def test_tools_that_never_wait_and_tools_that_do_give_the_same_results(
    ctx: ToolContext,
) -> None:
    @tool
    async def at_once(n: int) -> int:
        """Answers without waiting."""
        return n * 2

    @tool
    async def after_a_wait(n: int) -> int:
        """Answers after a wait."""
        await asyncio.sleep(0.001)
        return n * 2

    registry = ToolRegistry([at_once, after_a_wait])
    quick = await execute_tool(registry, call("at_once", {"n": 21}), ctx)
    slow = await execute_tool(registry, call("after_a_wait", {"n": 21}), ctx)
    assert (quick.content, quick.is_error) == (slow.content, slow.is_error) == ("42", False)
