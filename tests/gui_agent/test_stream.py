"""StreamWrapper: every kind of source read the same way, lazily, and closed on demand."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Iterator

import pytest

from gui_agent.exceptions import UserError
from gui_agent.stream import StreamWrapper

# -- each kind of source ---------------------------------------------------------------------


async def test_a_plain_string_is_one_item_not_characters() -> None:
    assert await StreamWrapper("hello").collect() == ["hello"]


async def test_none_gives_no_items() -> None:
    assert await StreamWrapper(None).collect() == []


async def test_a_dict_is_one_item() -> None:
    chunk = {"role": "assistant", "type": "message", "content": "hi"}
    assert await StreamWrapper(chunk).collect() == [chunk]


async def test_a_list_gives_its_elements() -> None:
    assert await StreamWrapper([1, 2, 3]).collect() == [1, 2, 3]


async def test_a_sync_generator_is_stepped_in_a_worker_thread() -> None:
    threads: list[int] = []

    def numbers() -> Iterator[int]:
        for number in range(3):
            threads.append(threading.get_ident())
            yield number

    assert await StreamWrapper(numbers()).collect() == [0, 1, 2]
    assert threading.get_ident() not in threads


async def test_an_async_generator_gives_what_it_yields() -> None:
    async def letters() -> AsyncIterator[str]:
        for letter in "abc":
            yield letter

    assert await StreamWrapper(letters()).collect() == ["a", "b", "c"]


async def test_a_coroutine_is_awaited_and_its_result_read_by_the_same_rules() -> None:
    async def value() -> str:
        return "done"

    async def many() -> list[int]:
        return [1, 2]

    async def nothing() -> None:
        return None

    async def letters() -> AsyncIterator[str]:
        yield "x"
        yield "y"

    async def stream() -> AsyncIterator[str]:
        return letters()

    assert await StreamWrapper(value()).collect() == ["done"]
    assert await StreamWrapper(many()).collect() == [1, 2]
    assert await StreamWrapper(nothing()).collect() == []
    assert await StreamWrapper(stream()).collect() == ["x", "y"]


async def test_an_async_with_block_closes_the_source() -> None:
    closed = asyncio.Event()

    async def forever() -> AsyncIterator[int]:
        try:
            while True:
                yield 1
        finally:
            closed.set()

    async with StreamWrapper(forever()) as stream:
        async for _ in stream:
            break
    assert closed.is_set()


async def test_a_stream_is_read_only_once() -> None:
    stream = StreamWrapper([1])
    assert await stream.collect() == [1]
    with pytest.raises(UserError, match="only once"):
        await stream.collect()


# -- no buffering --------------------------------------------------------------------------------


async def test_an_endless_sync_generator_yields_its_first_items() -> None:
    def endless() -> Iterator[int]:
        number = 0
        while True:
            yield number
            number += 1

    stream = StreamWrapper(endless())
    seen: list[int] = []
    async for number in stream:
        seen.append(number)
        if len(seen) == 3:
            break
    await stream.aclose()
    assert seen == [0, 1, 2]


async def test_an_endless_async_generator_yields_its_first_items() -> None:
    async def endless() -> AsyncIterator[int]:
        number = 0
        while True:
            yield number
            number += 1

    stream = StreamWrapper(endless())
    seen = []
    async for number in stream:
        seen.append(number)
        if len(seen) == 3:
            break
    await stream.aclose()
    assert seen == [0, 1, 2]


async def test_a_slow_sync_generator_does_not_block_the_loop() -> None:
    release = threading.Event()
    released_by_loop: list[bool] = []

    def slow() -> Iterator[str]:
        yield "first"
        # Only a task on the event loop can set this; a blocked loop would time out here.
        released_by_loop.append(release.wait(timeout=5))
        yield "second"

    async def ticker() -> None:
        for _ in range(5):
            await asyncio.sleep(0)
        release.set()

    async with asyncio.TaskGroup() as group:
        group.create_task(ticker())
        items = await StreamWrapper(slow()).collect()
    assert items == ["first", "second"]
    assert released_by_loop == [True]


# -- closing ---------------------------------------------------------------------------------------


async def test_aclose_runs_a_sync_generators_finally() -> None:
    closed = []

    def numbers() -> Iterator[int]:
        try:
            yield from range(10)
        finally:
            closed.append(True)

    stream = StreamWrapper(numbers())
    async for _ in stream:
        break
    await stream.aclose()
    assert closed == [True]


async def test_aclose_runs_an_async_generators_finally() -> None:
    closed = []

    async def numbers() -> AsyncIterator[int]:
        try:
            for number in range(10):
                yield number
        finally:
            closed.append(True)

    stream = StreamWrapper(numbers())
    async for _ in stream:
        break
    await stream.aclose()
    assert closed == [True]


async def test_aclose_before_reading_closes_a_coroutine_so_it_never_warns() -> None:
    async def value() -> int:
        return 1

    coroutine = value()
    stream = StreamWrapper(coroutine)
    await stream.aclose()
    assert inspect.getcoroutinestate(coroutine) == inspect.CORO_CLOSED


async def test_cancelling_the_reader_closes_an_async_source() -> None:
    closed = asyncio.Event()
    first = asyncio.Event()
    never = asyncio.Event()

    async def waits() -> AsyncIterator[int]:
        try:
            yield 1
            await never.wait()
            yield 2
        finally:
            closed.set()

    async def read() -> None:
        async with StreamWrapper(waits()) as stream:
            async for _ in stream:
                first.set()

    task = asyncio.create_task(read())
    await first.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert closed.is_set()


async def test_cancelling_mid_step_closes_a_sync_generator_when_its_step_returns() -> None:
    started = threading.Event()
    release = threading.Event()
    closed = threading.Event()

    def blocking() -> Iterator[int]:
        try:
            yield 1
            started.set()
            release.wait(timeout=5)
            yield 2
            yield 3
        finally:
            closed.set()

    got_first = asyncio.Event()

    async def read() -> None:
        async with StreamWrapper(blocking()) as stream:
            async for _ in stream:
                got_first.set()

    task = asyncio.create_task(read())
    await got_first.wait()
    await asyncio.to_thread(started.wait, 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task  # returns although the generator is still blocked in its thread
    assert not closed.is_set()
    release.set()
    assert await asyncio.to_thread(closed.wait, 5)


# -- sync iteration --------------------------------------------------------------------------------


async def test_sync_iteration_of_async_sources_in_a_worker_thread() -> None:
    async def letters() -> AsyncIterator[str]:
        for letter in "ab":
            yield letter

    async def many() -> list[int]:
        return [1, 2]

    assert await asyncio.to_thread(lambda: list(StreamWrapper(letters()))) == ["a", "b"]
    assert await asyncio.to_thread(lambda: list(StreamWrapper(many()))) == [1, 2]


async def test_sync_iteration_of_an_endless_async_source_stops_and_closes_it() -> None:
    closed = []

    async def endless() -> AsyncIterator[int]:
        try:
            number = 0
            while True:
                yield number
                number += 1
        finally:
            closed.append(True)

    def first_three() -> list[int]:
        seen = []
        iterator = iter(StreamWrapper(endless()))
        for number in iterator:
            seen.append(number)
            if len(seen) == 3:
                break
        iterator.close()
        return seen

    assert await asyncio.to_thread(first_three) == [0, 1, 2]
    assert closed == [True]


async def test_sync_iteration_of_an_async_source_inside_a_running_loop_is_refused() -> None:
    async def letters() -> AsyncGenerator[str, None]:
        yield "a"

    source = letters()
    stream = StreamWrapper(source)
    with pytest.raises(UserError, match="async for"):
        list(stream)
    await source.aclose()


def test_sync_iteration_of_sync_sources_needs_no_loop() -> None:
    def numbers() -> Iterator[int]:
        yield 1
        yield 2

    assert list(StreamWrapper(numbers())) == [1, 2]
    assert list(StreamWrapper("text")) == ["text"]
    assert list(StreamWrapper(None)) == []
