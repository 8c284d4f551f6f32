"""How the SQLite session store scales. A script, not a test (pytest does not collect it).

    .venv/bin/python tests/bench/bench_store.py [--sessions 1000] [--messages 100000]
                                                 [--long 10000]

On a temporary database file it measures:

- appends: N messages spread over S sessions, each committed on its own (appends/s);
- opening a 10,000-message session (`--long`; load_messages) and windowing it with
  SlidingWindowMemory (ms: cold, again, and after a turn appended a reply and a tool
  result, when the memory extends its last window);
- listing 1,000 sessions (ms);
- one append at conversation length 100 vs 10,000 (ms): it should not grow.

The JSON keys name the long session `long` (`load_long_ms`, `append_at_long_ms`) and give
its length as `long_messages`.

Prints a table, then one JSON object on the last line.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from gui_agent.memory import SlidingWindowMemory
from gui_agent.store import SQLiteStore
from gui_agent.tokens import counter_for_model
from schema import Message, Role, SessionRecord, ToolCall

OWNER = "bench"
LONG_SESSION = 10_000
SAMPLES = 200
WINDOW_SAMPLES = 20
MIN_LONG = 2 * SAMPLES + 100
_WORDS = ("the", "agent", "reads", "a", "file", "then", "runs", "tests", "and", "reports", "why")


def message(index: int) -> Message:
    """A plausible chat message of 200-400 characters, user and assistant in turn."""
    role = Role.USER if index % 2 == 0 else Role.ASSISTANT
    words = [_WORDS[(index + i) % len(_WORDS)] for i in range(40 + index % 40)]
    return Message(role=role, content=f"{index}: " + " ".join(words))


async def timed(operation: Callable[[], Awaitable[Any]]) -> tuple[float, Any]:
    """Seconds the awaited operation took, and its result."""
    started = time.perf_counter()
    result = await operation()
    return time.perf_counter() - started, result


async def append_latency_ms(store: SQLiteStore, session_id: str, start: int) -> float:
    """Median milliseconds of SAMPLES single appends to a session."""
    samples = []
    for offset in range(SAMPLES):

        def append(number: int = start + offset) -> Awaitable[None]:
            return store.append_message(session_id, message(number))

        seconds, _ = await timed(append)
        samples.append(seconds * 1000)
    return statistics.median(samples)


async def fill(store: SQLiteStore, session_id: str, count: int, start: int = 0) -> None:
    for index in range(start, start + count):
        await store.append_message(session_id, message(index))


async def run(sessions: int, messages: int, long_messages: int, folder: Path) -> dict[str, float]:
    results: dict[str, float] = {}
    async with SQLiteStore(folder / "bench.db") as store:
        ids = []
        for index in range(sessions):
            record = SessionRecord(owner=OWNER, title=f"session {index}")
            await store.create_session(record)
            ids.append(record.id)

        started = time.perf_counter()
        for index in range(messages):
            await store.append_message(ids[index % sessions], message(index))
        elapsed = time.perf_counter() - started
        results["appends_per_s"] = messages / elapsed
        results["append_mean_ms"] = elapsed / messages * 1000

        long = SessionRecord(owner=OWNER, title="a long conversation")
        await store.create_session(long)
        await fill(store, long.id, 100)
        results["append_at_100_ms"] = await append_latency_ms(store, long.id, 100)
        await fill(store, long.id, long_messages - 2 * SAMPLES - 100, start=100 + SAMPLES)
        results["append_at_long_ms"] = await append_latency_ms(
            store, long.id, long_messages - SAMPLES
        )

        seconds, history = await timed(lambda: store.load_messages(long.id))
        results["load_long_ms"] = seconds * 1000
        results["loaded_messages"] = len(history)
        memory = SlidingWindowMemory(counter=counter_for_model("gpt-4o"))
        prompt = "You are a helpful assistant."
        # Windowing is synchronous CPU work: timed directly, in this thread.
        started = time.perf_counter()
        window = memory.window(history, system_prompt=prompt)
        results["window_cold_ms"] = (time.perf_counter() - started) * 1000
        again = []
        for _ in range(WINDOW_SAMPLES):
            started = time.perf_counter()
            memory.window(history, system_prompt=prompt)
            again.append((time.perf_counter() - started) * 1e6)
        results["window_again_us"] = statistics.median(again)
        # What a turn does next: a reply with a tool call and its result appended, windowed
        # again (the memory extends its last window instead of walking back again).
        extended = []
        for n in range(WINDOW_SAMPLES):  # 40 messages more: still under the message cap
            call = ToolCall(id=f"bench-{n}", name="run_python", arguments='{"code": "1 + 1"}')
            history += [
                Message(role=Role.ASSISTANT, content="Let me check.", tool_calls=(call,)),
                Message(role=Role.TOOL, tool_call_id=call.id, content="2"),
            ]
            started = time.perf_counter()
            grown = memory.window(history, system_prompt=prompt)
            extended.append((time.perf_counter() - started) * 1e6)
        results["window_extended_us"] = statistics.median(extended)
        assert len(grown.messages) == len(window.messages) + 2 * WINDOW_SAMPLES, "the window grew"
        results["window_messages"] = len(window.messages)

        list_samples = []
        for _ in range(5):
            seconds, listed = await timed(lambda: store.list_sessions(OWNER, limit=1000))
            list_samples.append(seconds * 1000)
        assert len(listed) == 1000, len(listed)
        results["list_1000_ms"] = statistics.median(list_samples)
    results["db_mb"] = sum(p.stat().st_size for p in folder.iterdir()) / 1e6
    return results


def table(results: dict[str, float], sessions: int, messages: int, long_messages: int) -> str:
    rows = [
        (
            f"append {messages:,} messages over {sessions:,} sessions",
            "appends/s",
            results["appends_per_s"],
        ),
        ("  mean time per append", "ms", results["append_mean_ms"]),
        ("append at conversation length 100-300 (median)", "ms", results["append_at_100_ms"]),
        (
            f"append at conversation length {long_messages - SAMPLES:,}-{long_messages:,} (median)",
            "ms",
            results["append_at_long_ms"],
        ),
        (
            f"open a {long_messages:,}-message session (load_messages)",
            "ms",
            results["load_long_ms"],
        ),
        ("window it with SlidingWindowMemory, cold", "ms", results["window_cold_ms"]),
        ("window it again (median)", "µs", results["window_again_us"]),
        ("window after a reply and a tool result (median)", "µs", results["window_extended_us"]),
        ("  messages in the window", "msgs", results["window_messages"]),
        ("list 1,000 sessions (median of 5)", "ms", results["list_1000_ms"]),
        ("database files on disk", "MB", results["db_mb"]),
    ]
    width = max(len(label) for label, _, _ in rows)
    lines = [f"{'measure':<{width}}  {'value':>12}  unit", "-" * (width + 22)]
    lines += [f"{label:<{width}}  {value:>12,.2f}  {unit}" for label, unit, value in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=100_000)
    parser.add_argument("--long", type=int, default=LONG_SESSION, help="the long session's length")
    args = parser.parse_args()
    if args.sessions < 1000:
        parser.error("--sessions must be at least 1000 (the listing step lists 1,000)")
    if args.long < MIN_LONG:
        parser.error(f"--long must be at least {MIN_LONG} (two samples of {SAMPLES} and 100)")
    with tempfile.TemporaryDirectory(prefix="gui-agent-bench-") as folder:
        results = asyncio.run(run(args.sessions, args.messages, args.long, Path(folder)))
    print(table(results, args.sessions, args.messages, args.long))
    growth = results["append_at_long_ms"] / results["append_at_100_ms"]
    print(f"append cost at {args.long:,} vs 100 messages: x{growth:.2f}")
    summary = {key: round(value, 3) for key, value in results.items()}
    summary["append_growth_long_vs_100"] = round(growth, 3)
    summary["long_messages"] = args.long
    print(json.dumps(summary, sort_keys=True))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
