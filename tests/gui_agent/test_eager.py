"""gui_agent.eager: a coroutine run up to its first wait goes on exactly as if awaited."""

from __future__ import annotations

import asyncio

import pytest

from gui_agent.eager import start


async def add(a: int, b: int) -> int:
    return a + b


def test_a_coroutine_that_never_waits_finishes_while_starting() -> None:
    started = start(add(2, 3))  # no event loop needed: nothing waits
    assert started.done
    assert started.result() == 5
    with pytest.raises(RuntimeError, match="already finished"):
        started.rest().close()


async def test_a_waiting_coroutine_goes_on_where_it_stopped() -> None:
    steps: list[str] = []

    async def two_waits() -> str:
        steps.append("before")
        await asyncio.sleep(0)
        steps.append("middle")
        await asyncio.sleep(0.01)
        return "after"

    started = start(two_waits())
    assert not started.done
    assert steps == ["before"]  # ran up to its first wait, in this task, at once
    with pytest.raises(RuntimeError, match="still waiting"):
        started.result()
    assert await started.rest() == "after"
    assert steps == ["before", "middle"]


async def test_futures_it_waits_on_deliver_their_results_and_errors() -> None:
    loop = asyncio.get_running_loop()
    value: asyncio.Future[int] = loop.create_future()
    failure: asyncio.Future[int] = loop.create_future()

    async def reads() -> int:
        first = await value
        try:
            await failure
        except KeyError as error:
            return first + len(str(error))
        return -1

    started = start(reads())
    loop.call_soon(value.set_result, 40)
    loop.call_later(0.01, failure.set_exception, KeyError("x"))
    assert await started.rest() == 40 + len("'x'")


async def test_errors_come_out_where_they_happen() -> None:
    async def fails_at_once() -> None:
        raise ValueError("before any wait")

    async def fails_later() -> None:
        await asyncio.sleep(0)
        raise ValueError("after a wait")

    with pytest.raises(ValueError, match="before any wait"):
        start(fails_at_once())
    started = start(fails_later())
    with pytest.raises(ValueError, match="after a wait"):
        await started.rest()


async def test_cancelling_the_task_cancels_the_coroutine_inside() -> None:
    entered = asyncio.Event()
    cleaned: list[str] = []

    async def long_job() -> None:
        entered.set()
        try:
            await asyncio.Event().wait()
        finally:
            cleaned.append("finally ran")

    async def caller() -> None:
        started = start(long_job())
        await started.rest()

    task = asyncio.create_task(caller())
    await entered.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert cleaned == ["finally ran"]


async def test_a_coroutine_may_handle_its_cancellation_and_return() -> None:
    entered = asyncio.Event()

    async def stubborn() -> str:
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return "cleaned up"
        return "never"

    async def caller() -> str:
        started = start(stubborn())
        return await started.rest()

    task = asyncio.create_task(caller())
    await entered.wait()
    task.cancel()
    assert await task == "cleaned up"


async def test_the_coroutine_runs_in_the_callers_task() -> None:
    async def whose() -> asyncio.Task[object] | None:
        before = asyncio.current_task()
        await asyncio.sleep(0)
        assert asyncio.current_task() is before
        return before

    started = start(whose())
    assert await started.rest() is asyncio.current_task()


async def test_a_timeout_around_the_rest_interrupts_it() -> None:
    async def hangs() -> None:
        await asyncio.Event().wait()

    started = start(hangs())
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await started.rest()
