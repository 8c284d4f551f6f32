"""A running call shows what it prints as it prints it (`tool_call_output`): run_python's
output, or any tool's `ToolContext.show`. (Before, a script that printed its progress for a
minute showed nothing until it ended.)"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from connectors.scripted import ScriptedReply, call, calls
from gui_agent.live_output import CHUNK_CHARS, INTERVAL_S, SHOWN_CHARS, LiveOutput
from gui_agent.tools import ToolContext, tool
from schema import Event, ToolCallFinished, ToolCallOutput
from tests.gui_agent.helpers import make, running_code

TICKS = (
    "import time\n"
    "for i in range(3):\n"
    "    print('tick', i, flush=True)\n"
    "    time.sleep(0.5)\n"
    "print('done')\n"
)


async def test_run_python_output_is_shown_while_the_code_runs(tmp_path: Path) -> None:
    interpreter = running_code(tmp_path, TICKS, "after")
    seen: list[tuple[float, Event]] = []
    async for event in interpreter.chat("count"):
        seen.append((time.monotonic(), event))
    types = [e.type for _, e in seen]
    started, finished = types.index("tool_call_started"), types.index("tool_call_finished")
    live = [(at, e) for at, e in seen if isinstance(e, ToolCallOutput)]
    assert live, types
    at = [i for i, kind in enumerate(types) if kind == "tool_call_output"]
    assert started < at[0] and at[-1] < finished
    assert {e.call_id for _, e in live} == {seen[started][1].call.id}
    assert "".join(e.text for _, e in live) == "tick 0\ntick 1\ntick 2\ndone\n"
    # shown as it came: the first tick a second or more before the call's end
    first_tick = next(at for at, e in live if "tick 0" in e.text)
    assert seen[finished][0] - first_tick > 0.8
    # not kept: the history has the call's result only
    assert interpreter.session.history[-2].content.startswith("tick 0\ntick 1\ntick 2\ndone")


async def test_a_tool_of_your_own_shows_progress_with_ctx_show(tmp_path: Path) -> None:
    @tool
    async def crawl(ctx: ToolContext, pages: int) -> str:
        """Crawl some pages."""
        for page in range(pages):
            ctx.show(f"page {page} read\n")
            await asyncio.sleep(INTERVAL_S * 1.5)
        return f"{pages} pages"

    interpreter, _ = make(tmp_path, [call("crawl", pages=3), "after"], tools=[crawl])
    events = [e async for e in interpreter.chat("crawl")]
    live = [e for e in events if isinstance(e, ToolCallOutput)]
    assert len(live) >= 2  # in parts, as it went
    assert "".join(e.text for e in live) == "page 0 read\npage 1 read\npage 2 read\n"
    assert events.index(live[-1]) < [e.type for e in events].index("tool_call_finished")


async def test_fast_output_is_sent_in_few_parts_and_says_what_was_left_out(
    tmp_path: Path,
) -> None:
    code = "for i in range(200_000):\n    print(i)\n"
    interpreter = running_code(tmp_path, code, "after")
    events = [e async for e in interpreter.chat("flood")]
    live = [e for e in events if isinstance(e, ToolCallOutput)]
    printed = sum(len(f"{i}\n") for i in range(200_000))
    assert live and all(len(e.text) <= CHUNK_CHARS for e in live)
    assert sum(len(e.text) + e.omitted for e in live) == printed  # every character counted
    assert sum(e.omitted for e in live) > 0
    assert live[-1].text.endswith("199999\n")


async def test_parallel_calls_each_show_their_own_output(tmp_path: Path) -> None:
    @tool
    async def say(ctx: ToolContext, word: str) -> str:
        """Say a word."""
        ctx.show(word)
        await asyncio.sleep(INTERVAL_S * 2)
        return word

    replies: list[ScriptedReply] = [
        calls(("say", {"word": "left"}, "a"), ("say", {"word": "right"}, "b")),
        "after",
    ]
    interpreter, _ = make(tmp_path, replies, tools=[say])
    events = [e async for e in interpreter.chat("both")]
    live = {e.call_id: e.text for e in events if isinstance(e, ToolCallOutput)}
    assert live == {"a": "left", "b": "right"}


async def test_nothing_is_shown_after_a_stop_ends_the_call(tmp_path: Path) -> None:
    ready = asyncio.Event()

    @tool
    async def loop(ctx: ToolContext) -> str:
        """Print forever."""
        while True:
            ctx.show("more\n")
            ready.set()
            await asyncio.sleep(0.01)

    interpreter, _ = make(tmp_path, [call("loop"), "after"], tools=[loop])
    async with interpreter.subscribe() as sub:
        await interpreter.send("go")
        await ready.wait()
        await interpreter.stop()
        await asyncio.sleep(INTERVAL_S * 2)  # past the next publishing time
        events = sub.pending()
    types = [e.type for e in events]
    assert "tool_call_finished" in types
    assert "tool_call_output" not in types[types.index("tool_call_finished") :]
    # the session is usable: the next turn runs
    after = [e async for e in interpreter.chat("again")]
    assert after[-1].type == "state_changed"


async def test_output_of_a_call_that_is_not_running_is_dropped() -> None:
    published: list[Event] = []
    running = {"a"}
    live = LiveOutput(published.append, running.__contains__)
    live.feed("b", "not running")
    live.feed("a", "")
    live.feed("a", "x" * (CHUNK_CHARS + 10))
    running.clear()
    live.flush()
    assert published == []
    running.add("a")
    live.feed("a", "kept")
    await asyncio.sleep(INTERVAL_S * 1.5)
    assert published == [ToolCallOutput(call_id="a", text="kept", at=published[0].at)]


async def test_the_calls_running_say_what_they_printed_so_far(tmp_path: Path) -> None:
    said, go_on = asyncio.Event(), asyncio.Event()

    @tool
    async def fetch(ctx: ToolContext, pages: int) -> str:
        """Fetch pages."""
        said.set()
        await go_on.wait()
        for page in range(pages):
            ctx.show(f"page {page}\n")
        for part in ("x", "y"):  # a part an event, the two as much as is kept
            await asyncio.sleep(INTERVAL_S * 1.5)
            ctx.show(part * (SHOWN_CHARS // 2))
        await asyncio.sleep(INTERVAL_S * 1.5)
        said.set()
        await go_on.wait()
        return "fetched"

    interpreter, _ = make(tmp_path, [call("fetch", pages=3), "after"], tools=[fetch])
    async with interpreter.subscribe() as sub:
        await interpreter.send("fetch")
        await said.wait()
        (before,) = interpreter.running_calls  # running, nothing printed yet
        assert (before.text, before.omitted, before.session_id) == ("", 0, interpreter.id)
        said.clear()
        go_on.set()
        go_on.clear()
        await said.wait()
        (now,) = interpreter.running_calls
        assert now.call_id == before.call_id
        half = SHOWN_CHARS // 2
        assert now.text == "x" * half + "y" * half
        assert now.omitted == len("page 0\npage 1\npage 2\n")
        published = [e for e in sub.pending() if isinstance(e, ToolCallOutput)]
        assert now.seq == published[-1].seq and now.seq <= interpreter.last_seq
        go_on.set()
        async for _ in sub.until_idle():
            pass
    assert interpreter.running_calls == ()


async def test_a_plain_function_tool_shows_progress_from_its_worker_thread(
    tmp_path: Path,
) -> None:
    """A sync tool runs in a worker thread, where there is no event loop: its `show` is
    handed to the loop (it used to raise "no running event loop" and fail the tool)."""

    @tool
    def convert(ctx: ToolContext, files: int) -> str:
        """Convert some files."""
        for number in range(files):
            ctx.show(f"file {number} converted\n")
            time.sleep(INTERVAL_S * 0.6)
        return f"{files} files"

    interpreter, _ = make(tmp_path, [call("convert", files=4), "after"], tools=[convert])
    events = [e async for e in interpreter.chat("convert")]
    live = [e for e in events if isinstance(e, ToolCallOutput)]
    finished = next(e for e in events if isinstance(e, ToolCallFinished))
    assert not finished.result.is_error and finished.result.content == "4 files"
    assert "".join(e.text for e in live) == "".join(f"file {n} converted\n" for n in range(4))
    assert len(live) >= 2 and events.index(live[-1]) < events.index(finished)
