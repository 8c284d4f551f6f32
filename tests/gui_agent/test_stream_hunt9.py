"""A sync generator stuck in a step after Stop holds nothing the rest of the program needs."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

from gui_agent.stream import StreamWrapper


def test_a_stuck_step_after_stop_holds_no_shared_worker_and_lets_the_loop_end() -> None:
    started, release, closed, ended = (threading.Event() for _ in range(4))
    outcome: list[str] = []

    def interpreter() -> Iterator[str]:  # an external interpreter waiting on something
        try:
            yield "first"
            started.set()
            release.wait(timeout=120)
            yield "late"
        finally:
            closed.set()

    async def main() -> None:
        # One shared worker, as a small machine's default executor is soon used up.
        asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor(max_workers=1))
        stream = StreamWrapper(interpreter())
        got_first = asyncio.Event()

        async def read() -> None:
            async for _ in stream:
                got_first.set()

        task = asyncio.create_task(read())
        await got_first.wait()
        with ThreadPoolExecutor(max_workers=1) as waiter:
            await asyncio.get_running_loop().run_in_executor(waiter, started.wait, 60)
        task.cancel()  # Stop, while the step blocks
        with contextlib.suppress(asyncio.CancelledError):
            await task
        # File tools and others use the shared executor: it must not wait for the step.
        outcome.append(await asyncio.to_thread(lambda: "the shared worker is free"))

    def run() -> None:
        asyncio.run(main())  # returns without waiting for the stuck step
        ended.set()

    runner = threading.Thread(target=run, daemon=True)
    runner.start()
    try:
        assert ended.wait(timeout=60), "the loop waited for a stream step stuck after Stop"
        assert outcome == ["the shared worker is free"]
        assert not closed.is_set()  # still stuck; closed once the step returns
    finally:
        release.set()
    assert closed.wait(timeout=60)
