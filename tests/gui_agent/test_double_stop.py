"""Stop pressed again while the first Stop is ending the run (a double click, Ctrl-C twice,
the chat closing during a Stop): the run still ends as one Stop ends it, its tools' own
clean-up included, and every caller is told it stopped the run."""

from __future__ import annotations

import asyncio
from pathlib import Path

from connectors.scripted import call
from gui_agent.tools import tool
from schema import InterpreterState, MessageStatus, Role, RunFinished, RunOutcome
from tests.gui_agent.helpers import make


async def test_a_second_stop_waits_for_the_first_and_the_tools_clean_up_runs_to_its_end(
    tmp_path: Path,
) -> None:
    started, cleaning = asyncio.Event(), asyncio.Event()
    cleaned: list[str] = []

    @tool
    async def slow_to_end() -> str:
        """Start a long job."""
        started.set()
        try:
            await asyncio.Event().wait()
        finally:  # ending what it started takes a moment (a process asked to stop)
            cleaning.set()
            await asyncio.sleep(0.2)
            cleaned.append("ended")
        return "never"

    interpreter, model = make(
        tmp_path,
        [call("slow_to_end"), "never asked"],
        tools=[slow_to_end],
        permissions={"slow_to_end": "allow"},  # type: ignore[dict-item]
    )
    async with interpreter.subscribe() as sub:
        await interpreter.send("start the job")
        await started.wait()
        first = asyncio.create_task(interpreter.stop())
        await cleaning.wait()  # the first Stop is being handled: the tool is ending its job
        async with asyncio.timeout(10):
            stops = await asyncio.gather(first, interpreter.stop("stopped again"))
        events = sub.pending()
    assert stops == [True, True]
    assert cleaned == ["ended"]  # not cut short by the second Stop
    finished = [e for e in events if isinstance(e, RunFinished)]
    assert [e.outcome for e in finished] == [RunOutcome.INTERRUPTED]
    assert finished[0].detail == "stopped by the user"  # the first Stop's reason
    result = interpreter.session.history[-1]
    assert result.role is Role.TOOL and result.status is MessageStatus.INTERRUPTED
    assert interpreter.state is InterpreterState.STOP and not interpreter.busy
    assert len(model.requests) == 1  # type: ignore[attr-defined]
    assert await interpreter.stop() is False  # idle now: nothing to stop
