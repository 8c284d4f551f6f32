"""A call a Stop ends says what it had made by then: what run_python's code had printed, or
what any tool left in `ToolContext.partial`. (It said only that it was interrupted, so a
long script stopped halfway showed nothing of what it had done.)"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from connectors.scripted import ScriptedReply, calls
from gui_agent.tools import ToolContext, tool
from schema import MessageStatus, Role
from tests.gui_agent.helpers import make, running_code

PRINTED = "What it had printed by then:\n"


async def test_a_stopped_run_python_answers_with_what_its_code_had_printed(
    tmp_path: Path,
) -> None:
    code = (
        "import pathlib, time\n"
        "print('step 1 done', flush=True)\n"
        "pathlib.Path('ready').write_text('')\n"
        "time.sleep(60)\n"
        "print('never')\n"
    )
    interpreter = running_code(tmp_path, code, "after")
    await interpreter.send("run the long script")
    deadline = time.monotonic() + 30
    while not (tmp_path / "ready").exists():
        assert time.monotonic() < deadline, "the code never started"
        await asyncio.sleep(0.05)
    await interpreter.stop()
    answer = interpreter.session.history[-1]
    assert answer.role is Role.TOOL and answer.status is MessageStatus.INTERRUPTED
    assert answer.content.startswith("Interrupted while running")
    assert answer.content.endswith(PRINTED + "step 1 done\n"), answer.content
    assert interpreter.session.stopped_output is None  # said once, then forgotten


async def test_parallel_calls_stopped_each_say_what_they_had_made(tmp_path: Path) -> None:
    begun: list[int] = []

    @tool
    async def crawl(ctx: ToolContext, site: int) -> str:
        """Crawl a site."""
        if site:
            ctx.partial.append(f"{site} pages read")
        begun.append(site)
        await asyncio.Event().wait()
        return "never"

    replies: list[ScriptedReply] = [calls(("crawl", {"site": 0}), ("crawl", {"site": 3})), "after"]
    interpreter, _ = make(tmp_path, replies, tools=[crawl])
    await interpreter.send("crawl both")
    deadline = time.monotonic() + 30
    while len(begun) < 2:
        assert time.monotonic() < deadline, "the calls never started"
        await asyncio.sleep(0.01)
    await interpreter.stop()
    quiet, read = interpreter.session.history[-2:]
    assert PRINTED not in quiet.content  # it left nothing: nothing is said
    assert read.content.endswith(PRINTED + "3 pages read")
