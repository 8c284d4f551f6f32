"""Framework overhead of one full agent run, against a hand-written asyncio loop.

One run: model → tool call(s) → model → final text, with the full event stream consumed.
Both sides use the same zero-latency ScriptedModel and the same async tool, so the
difference is what GuiAgent adds: state machine, events, memory window, permissions, tool
execution, history. Also: memory per idle interpreter, for 10,000 sessions.

A third loop, the "event floor", is the bare loop plus only the event contract: the same
events (pydantic models, stamped with seq/session/run) built in a task of their own and
delivered to a subscriber. No state machine, memory, permissions or timeouts. It shows
how much of the overhead the event stream alone costs in this process.

A fourth, the "plain" loop, does the run with dicts and a bare generator for the model, no
types at all: the scale of the issue's hand-written loop (about 9 µs where it was
measured), so a reader can tell this machine's speed from the cost of typed messages.

Run: python tests/bench/bench_core.py [--runs N]. The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections import deque
from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from connectors.scripted import ScriptedModel, calls
from gui_agent import ToolRegistry, create_interpreter, tool
from gui_agent.agents import (
    AgentDeps,
    default_architectures,
)
from gui_agent.interpreter import Interpreter
from gui_agent.memory import SlidingWindowMemory
from gui_agent.session import Session
from gui_agent.tools import PermissionPolicy
from schema import (
    Event,
    InterpreterState,
    MemoryUpdated,
    Message,
    MessageCompleted,
    MessageStarted,
    ModelResponse,
    ModelTextDelta,
    Role,
    RunFinished,
    RunOutcome,
    StateChanged,
    TextDelta,
    ToolCall,
    ToolCallFinished,
    ToolCallStarted,
    ToolResult,
    Usage,
    UsageReported,
    new_id,
)


@tool
async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


ADD_SCHEMAS = (add.schema,)  # built once, as GuiAgent's registry does (`.schema` copies)


def script(n_calls: int) -> list[ModelResponse | str]:
    specs = [("add", {"a": i, "b": 1}, f"c{i}") for i in range(n_calls)]
    return [calls(*specs), "The answers are ready."]


def fresh_script(model: ScriptedModel, n_calls: int) -> None:
    """Queue one run's replies. The model records every request it gets; the log is
    emptied first so that a long benchmark does not grow it (the same for every loop)."""
    model.requests.clear()
    model.push(*script(n_calls))


async def framework_run(interpreter: Interpreter, model: ScriptedModel, n_calls: int) -> int:
    fresh_script(model, n_calls)
    interpreter.session.history.clear()
    count = 0
    async for _ in interpreter.chat("add them"):
        count += 1
    return count


async def run_calls(tool_calls: tuple[ToolCall, ...]) -> list[int]:
    """The tools, concurrently; one call is awaited directly (a task would cost more)."""
    if len(tool_calls) == 1:
        return [await add.function(**json.loads(tool_calls[0].arguments))]
    return list(
        await asyncio.gather(*(add.function(**json.loads(c.arguments)) for c in tool_calls))
    )


async def bare_run(model: ScriptedModel, n_calls: int) -> int:
    """The minimum: stream, run the tools concurrently, stream again."""
    fresh_script(model, n_calls)
    schemas = ADD_SCHEMAS
    messages = [Message(role=Role.USER, content="add them")]
    final: ModelResponse | None = None
    async for part in model.stream(messages, tools=schemas):
        if isinstance(part, ModelResponse):
            final = part
    assert final is not None
    results = await run_calls(final.tool_calls)
    messages.append(Message(role=Role.ASSISTANT, tool_calls=final.tool_calls))
    for c, r in zip(final.tool_calls, results, strict=True):
        messages.append(Message(role=Role.TOOL, tool_call_id=c.id, content=str(r)))
    text = []
    async for part in model.stream(messages, tools=schemas):
        if isinstance(part, ModelTextDelta):
            text.append(part.text)
    return len(text)


async def _plain_model(replies: deque[dict[str, object]]) -> AsyncIterator[dict[str, object]]:
    """A model reduced to plain dicts: the next reply's words, then the reply itself."""
    reply = replies.popleft()
    for word in str(reply.get("content") or "").split(" "):
        yield {"delta": word}
    yield reply


async def plain_run(n_calls: int) -> int:
    """The same run in plain Python: dicts for messages, a bare generator for the model, no
    types and no checks. It calibrates the machine against the issue's hand-written loop
    (about 9 µs where the issue was measured); `bare_run` is this plus the typed messages,
    replies and usage that every loop here shares."""
    replies: deque[dict[str, object]] = deque(
        (
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": f"c{i}", "name": "add", "arguments": f'{{"a": {i}, "b": 1}}'}
                    for i in range(n_calls)
                ],
            },
            {"role": "assistant", "content": "The answers are ready."},
        )
    )
    messages: list[dict[str, object]] = [{"role": "user", "content": "add them"}]
    reply: dict[str, object] = {}
    async for part in _plain_model(replies):
        reply = part
    calls = cast("list[dict[str, str]]", reply["tool_calls"])
    messages.append(reply)
    if len(calls) == 1:
        values = [await add.function(**json.loads(calls[0]["arguments"]))]
    else:
        values = await asyncio.gather(*(add.function(**json.loads(c["arguments"])) for c in calls))
    for c, value in zip(calls, values, strict=True):
        messages.append({"role": "tool", "tool_call_id": c["id"], "content": str(value)})
    text = [str(part["delta"]) async for part in _plain_model(replies) if "delta" in part]
    return len(text)


class _Inbox:
    """The smallest subscriber: a deque and a future to wake the reader."""

    def __init__(self) -> None:
        self.items: deque[Event | None] = deque()
        self.waiter: asyncio.Future[None] | None = None
        self.seq = 0

    def put(self, event: Event | None) -> None:
        if event is not None:
            self.seq += 1
            fields = event.__dict__
            fields["seq"], fields["session_id"], fields["run_id"] = self.seq, "s", "r"
        self.items.append(event)
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def read(self) -> AsyncIterator[Event]:
        while True:
            while not self.items:
                self.waiter = asyncio.get_running_loop().create_future()
                await self.waiter
            event = self.items.popleft()
            if event is None:
                return
            yield event


async def _floor_turn(model: ScriptedModel, inbox: _Inbox, prompt: Message) -> None:
    running, stopped = InterpreterState.RUNNING, InterpreterState.STOP
    inbox.put(StateChanged(from_state=stopped, to_state=running))
    inbox.put(MessageCompleted(message=prompt))
    history, usage, schemas = [prompt], Usage(), ADD_SCHEMAS
    while True:
        inbox.put(MemoryUpdated(message_ids=tuple(m.id for m in history), token_count=0))
        message_id = new_id()
        inbox.put(MessageStarted(message_id=message_id))
        final: ModelResponse | None = None
        async for part in model.stream(history, tools=schemas):
            if isinstance(part, ModelTextDelta):
                inbox.put(TextDelta(message_id=message_id, delta=part.text))
            elif isinstance(part, ModelResponse):
                final = part
        assert final is not None
        reply = Message(
            id=message_id, role=Role.ASSISTANT, content=final.text, tool_calls=final.tool_calls
        )
        history.append(reply)
        inbox.put(MessageCompleted(message=reply))
        usage = usage + final.usage
        inbox.put(UsageReported(turn=usage, total=usage))
        if not final.tool_calls:
            break
        for call in final.tool_calls:
            inbox.put(ToolCallStarted(call=call))
        results = await run_calls(final.tool_calls)
        for call, value in zip(final.tool_calls, results, strict=True):
            result = ToolResult(call_id=call.id, name=call.name, content=str(value))
            inbox.put(ToolCallFinished(result=result))
            answer = Message(role=Role.TOOL, tool_call_id=call.id, content=result.content)
            history.append(answer)
            inbox.put(MessageCompleted(message=answer))
    inbox.put(RunFinished(outcome=RunOutcome.COMPLETED))
    inbox.put(StateChanged(from_state=running, to_state=stopped))
    inbox.put(None)


async def floor_run(model: ScriptedModel, n_calls: int) -> int:
    """The bare loop plus the event stream, and nothing else GuiAgent does."""
    fresh_script(model, n_calls)
    inbox = _Inbox()
    task = asyncio.create_task(_floor_turn(model, inbox, Message(role=Role.USER, content="x")))
    count = 0
    async for _ in inbox.read():
        count += 1
    await task
    return count


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def measure(runs: int, n_calls: int, workdir: Path) -> dict[str, float]:
    fw_model = ScriptedModel()
    interpreter = create_interpreter(fw_model, tools=[add], builtin_tools=False, workdir=workdir)
    bare_model, floor_model = ScriptedModel(), ScriptedModel()
    events = floor_events = 0
    for _ in range(200):  # warm up every path
        events = await framework_run(interpreter, fw_model, n_calls)
        await bare_run(bare_model, n_calls)
        floor_events = await floor_run(floor_model, n_calls)
        await plain_run(n_calls)
    assert floor_events == events, (floor_events, events)
    # Two passes, each interleaving two loops run for run, so both see the same machine
    # state: GuiAgent against bare, then the event floor against bare.
    fw: list[float] = []
    bare: list[float] = []
    gc.collect()
    for _ in range(runs):
        t0 = time.perf_counter()
        await bare_run(bare_model, n_calls)
        t1 = time.perf_counter()
        await framework_run(interpreter, fw_model, n_calls)
        t2 = time.perf_counter()
        bare.append((t1 - t0) * 1e6)
        fw.append((t2 - t1) * 1e6)
    floor: list[float] = []
    bare_again: list[float] = []
    gc.collect()
    for _ in range(runs):
        t0 = time.perf_counter()
        await bare_run(bare_model, n_calls)
        t1 = time.perf_counter()
        await floor_run(floor_model, n_calls)
        t2 = time.perf_counter()
        bare_again.append((t1 - t0) * 1e6)
        floor.append((t2 - t1) * 1e6)
    plain: list[float] = []
    for _ in range(runs):
        t0 = time.perf_counter()
        await plain_run(n_calls)
        plain.append((time.perf_counter() - t0) * 1e6)
    fw_med, bare_med = statistics.median(fw), statistics.median(bare)
    floor_med = statistics.median(floor)
    return {
        "tool_calls": n_calls,
        "events_per_run": events,
        "framework_median_us": round(fw_med, 1),
        "framework_p99_us": round(percentile(fw, 0.99), 1),
        "bare_median_us": round(bare_med, 1),
        "bare_p99_us": round(percentile(bare, 0.99), 1),
        "overhead_median_us": round(fw_med - bare_med, 1),
        "event_floor_median_us": round(floor_med, 1),
        "event_floor_overhead_us": round(floor_med - statistics.median(bare_again), 1),
        "plain_loop_median_us": round(statistics.median(plain), 1),
    }


def idle_memory(count: int, workdir: Path) -> float:
    """Bytes per idle interpreter (a session restored from the store, never run)."""
    model = ScriptedModel()
    tools = ToolRegistry([add])
    memory = SlidingWindowMemory()
    policy = PermissionPolicy()
    architectures = default_architectures()
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = []
    for _ in range(count):
        session = Session(workdir=workdir)
        deps = AgentDeps(provider=model, tools=tools, permissions=policy, memory=memory)
        kept.append(Interpreter(session, deps, architectures=architectures))
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return (after - before) / count


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--sessions", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-core-") as folder:
        workdir = Path(folder)
        one = asyncio.run(measure(args.runs, 1, workdir))
        ten = asyncio.run(measure(max(200, args.runs // 4), 10, workdir))
        per_session = idle_memory(args.sessions, workdir)
    rows = [one, ten]
    print(
        f"{'tool calls':>10} {'events':>7} {'GuiAgent med':>13} {'p99':>9} "
        f"{'bare med':>9} {'p99':>9} {'overhead':>9} {'event floor':>12} {'plain':>6}  (µs per run)"
    )
    for r in rows:
        print(
            f"{r['tool_calls']:>10} {r['events_per_run']:>7} {r['framework_median_us']:>13} "
            f"{r['framework_p99_us']:>9} {r['bare_median_us']:>9} {r['bare_p99_us']:>9} "
            f"{r['overhead_median_us']:>9} {r['event_floor_overhead_us']:>12} "
            f"{r['plain_loop_median_us']:>6}"
        )
    print(
        "overhead = GuiAgent − bare; event floor = (bare + only the event stream) − bare; "
        "plain = the run with dicts, no types (the issue's ~9 µs loop); medians"
    )
    print(
        f"idle interpreters: {args.sessions:,} sessions, {per_session:,.0f} bytes each, "
        f"{per_session * args.sessions / 2**20:,.1f} MiB in all"
    )
    print(
        json.dumps(
            {
                "bench": "core",
                "one_tool": one,
                "ten_tools": ten,
                "idle_bytes_per_session": round(per_session),
                "idle_sessions": args.sessions,
            }
        )
    )


if __name__ == "__main__":
    main()
