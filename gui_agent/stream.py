"""One interface over whatever an agent returned: a value, an (a)sync iterator, a coroutine.

`StreamWrapper(source)` is consumed once, either with ``async for`` (the usual way inside the
core) or with a plain ``for`` (from a worker thread, or any thread without a running loop).

How each kind of source is read:

========================================  ==============================================
source                                    items
========================================  ==============================================
``None``                                  none
``str``, ``bytes``, a mapping (a chunk),  the value itself, as one item
any other non-collection value
a list, tuple, set or other sequence      its elements
a sync iterator or generator              what it yields; under ``async for`` each step
                                          runs in a worker thread, so a slow generator
                                          never blocks the event loop
an async iterable / async generator       what it yields
an awaitable (e.g. a coroutine)           awaited first; its result is read by these rules
========================================  ==============================================

Nothing is buffered: items pass through as the source produces them. `aclose()` closes the
source (runs a generator's ``finally``), so cancelling the consumer ends the producer. A sync
generator that is in the middle of a step in a worker thread cannot be interrupted; it is
closed by that thread as soon as the step returns.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import logging
import queue
import threading
from collections.abc import (
    AsyncGenerator,
    AsyncIterable,
    AsyncIterator,
    Awaitable,
    Generator,
    Iterator,
    Mapping,
    Sequence,
)
from collections.abc import Set as AbstractSet
from types import TracebackType
from typing import Any, Final, Generic, TypeVar, cast, overload

from gui_agent.exceptions import UserError
from gui_agent.log_text import loggable, loggable_failure, loggable_traceback

__all__ = ["StreamWrapper"]

logger = logging.getLogger(__name__)

T = TypeVar("T")
_Single = TypeVar("_Single", bound=str | bytes | bytearray | Mapping[Any, Any])


class _End:
    """Marks the end of a stream where `None` could be a legitimate item."""

    __slots__ = ()


_END: Final = _End()


def _is_async_source(value: object) -> bool:
    return isinstance(value, AsyncIterable)


def _is_sync_source(value: object) -> bool:
    if isinstance(value, str | bytes | bytearray | memoryview | Mapping):
        return False
    return isinstance(value, Iterator | Sequence | AbstractSet)


def _needs_loop(value: object) -> bool:
    return _is_async_source(value) or inspect.isawaitable(value)


def _close_sync(source: object) -> None:
    """Close a sync generator (or anything with ``close()``); log, never raise."""
    close = getattr(source, "close", None)
    if not callable(close):
        return
    try:
        close()
    except Exception as error:
        _close_failed(source, error)


async def _close_async(source: object) -> None:
    """Close an async generator (or anything with ``aclose()``); log, never raise."""
    aclose = getattr(source, "aclose", None)
    if not callable(aclose):
        _close_sync(source)
        return
    try:
        await aclose()
    except Exception as error:
        _close_failed(source, error)


def _close_failed(source: object, error: Exception) -> None:
    logger.warning(
        "closing the stream source %s failed: %s", loggable(repr(source)), loggable_failure(error)
    )


class _ThreadStepper(Generic[T]):
    """Steps a blocking iterator in a daemon thread of its own, and closes it safely even
    mid-step.

    Not `asyncio.to_thread`: a step that blocks for good (an interpreter waiting for input)
    would hold a slot of the loop's default executor, which file tools and others share, and
    `asyncio.run` would wait for it before returning. A daemon thread holds neither.

    A generator cannot be closed while another thread is running it. `close()` therefore closes
    at once when no step is running, and otherwise leaves a note the running step acts on as soon
    as ``next()`` returns (in its worker thread).
    """

    def __init__(self, iterator: Iterator[T]) -> None:
        self._iterator = iterator
        self._lock = threading.Lock()
        self._busy = False
        self._close_requested = False
        self._requests: queue.SimpleQueue[
            tuple[asyncio.AbstractEventLoop, asyncio.Future[T | _End], contextvars.Context] | None
        ] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._finished = False  # the iterator ended or raised: no step is left to run

    def _step(self) -> T | _End:
        with self._lock:
            if self._close_requested:
                return _END
            self._busy = True
        try:
            return next(self._iterator, _END)
        finally:
            with self._lock:
                self._busy = False
                close_now = self._close_requested
            if close_now:
                _close_sync(self._iterator)

    def _serve(self) -> None:
        """The worker thread: one step per request, until `close()` (or the end)."""
        while (request := self._requests.get()) is not None:
            loop, future, context = request
            try:
                outcome: tuple[bool, object] = (True, context.run(self._step))
            except BaseException as error:  # handed to the awaiting task, not swallowed
                outcome = (False, error)
            finished = outcome[0] is False or outcome[1] is _END
            self._finished = finished
            try:
                loop.call_soon_threadsafe(_settle, future, *outcome)
            except RuntimeError:  # the loop closed while the step ran
                logger.debug("stream step finished after its event loop closed")
            if finished:
                return

    async def next(self) -> T | _End:
        if self._finished:
            return _END
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T | _End] = loop.create_future()
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._serve, name="gui-agent-stream", daemon=True
            )
            self._thread.start()
        self._requests.put((loop, future, contextvars.copy_context()))
        return await future

    def close(self) -> None:
        with self._lock:
            self._close_requested = True
            busy = self._busy
        self._requests.put(None)  # the worker thread, if any, ends after its step
        if not busy:
            _close_sync(self._iterator)


def _settle(future: asyncio.Future[Any], ok: bool, value: Any) -> None:
    if future.done():  # the awaiting task was cancelled meanwhile
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


async def _next_or_end(agen: AsyncIterator[T]) -> T | _End:
    try:
        return await anext(agen)
    except StopAsyncIteration:
        return _END


class StreamWrapper(Generic[T]):
    """Read a value, an (a)sync iterator or a coroutine as one stream of items. Single use."""

    @overload
    def __init__(self: StreamWrapper[_Single], source: _Single) -> None: ...
    @overload
    def __init__(self, source: AsyncIterable[T]) -> None: ...
    @overload
    def __init__(self, source: Iterator[T] | Sequence[T] | AbstractSet[T]) -> None: ...
    @overload
    def __init__(self: StreamWrapper[_Single], source: Awaitable[_Single]) -> None: ...
    @overload
    def __init__(self, source: Awaitable[AsyncIterable[T]]) -> None: ...
    @overload
    def __init__(self, source: Awaitable[Iterator[T] | Sequence[T] | AbstractSet[T]]) -> None: ...
    @overload
    def __init__(self, source: Awaitable[T | None]) -> None: ...
    @overload
    def __init__(self, source: T | None) -> None: ...

    def __init__(self, source: object) -> None:
        self._source: object = source
        self._claimed = False
        self._closed = False
        self._agen: AsyncGenerator[T, None] | None = None
        self._current: object = None
        self._stepper: _ThreadStepper[T] | None = None

    def __repr__(self) -> str:
        return f"StreamWrapper({type(self._source).__name__})"

    # -- async consumption -------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[T]:
        source = self._claim()
        self._agen = self._iterate_async(source)
        return self._agen

    async def collect(self) -> list[T]:
        """Every item, in order. Only for sources known to end."""
        try:
            return [item async for item in self]
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Close the source: a generator's ``finally`` runs (or will, once its step ends).

        Errors raised while closing are logged, never raised, so they cannot mask the exception
        (often `asyncio.CancelledError`) that caused the close. Safe to call more than once.
        """
        if self._closed:
            return
        self._closed = True
        if self._agen is not None:
            try:
                await self._agen.aclose()
            except RuntimeError as error:
                # Another task is inside the stream right now; it closes the source when it
                # leaves (the generator's `finally`). Touching the source here would race it.
                logger.warning(
                    "stream closed while another task was reading it: %s",
                    loggable_traceback(error),
                )
                return
        await self._close_current()
        if not self._claimed:
            self._claimed = True
            await self._close_source_object(self._source)

    async def __aenter__(self) -> StreamWrapper[T]:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def _iterate_async(self, source: object) -> AsyncGenerator[T, None]:
        try:
            while inspect.isawaitable(source) and not _is_async_source(source):
                source = await source
                self._current = source
            if source is None:
                return
            if _is_async_source(source):
                iterator = aiter(cast(AsyncIterable[T], source))
                self._current = iterator
                async for item in iterator:
                    yield item
            elif isinstance(source, Sequence | AbstractSet) and not isinstance(
                source, str | bytes | bytearray | memoryview
            ):
                # Already in memory: nothing can block, no thread needed.
                for item in cast(Sequence[T], source):
                    yield item
            elif _is_sync_source(source):
                stepper = self._stepper = _ThreadStepper(iter(cast(Iterator[T], source)))
                while not isinstance(step := await stepper.next(), _End):
                    yield step
            else:
                yield cast(T, source)
        finally:
            await self._close_current()

    async def _close_current(self) -> None:
        current, self._current = self._current, None
        stepper, self._stepper = self._stepper, None
        if stepper is not None:
            stepper.close()
        elif current is not None:
            await self._close_source_object(current)

    @staticmethod
    async def _close_source_object(source: object) -> None:
        if inspect.iscoroutine(source):
            source.close()  # never awaited: close it so it does not warn
        elif _is_async_source(source):
            await _close_async(source)
        elif _is_sync_source(source):
            _close_sync(source)

    # -- sync consumption --------------------------------------------------------------

    def __iter__(self) -> Generator[T, None, None]:
        """Iterate without an event loop. Async sources run on a private loop in this thread.

        Raises `UserError` for an async source when this thread already runs an event loop
        (use ``async for`` there). Breaking out of the loop closes the source.
        """
        source = self._source
        if _needs_loop(source):
            try:
                asyncio.get_running_loop()
            except RuntimeError:
                pass
            else:
                raise UserError(
                    "this stream has an async source and this thread runs an event loop: "
                    "use `async for` (or `await stream.collect()`) instead of `for`"
                )
            self._claim()
            return self._iterate_on_private_loop(source)
        self._claim()
        return self._iterate_sync(source)

    def _iterate_sync(self, source: object) -> Generator[T, None, None]:
        if source is None:
            return
        if not _is_sync_source(source):
            yield cast(T, source)
            return
        try:
            yield from cast(Iterator[T], source)
        finally:
            self._closed = True
            _close_sync(source)

    def _iterate_on_private_loop(self, source: object) -> Generator[T, None, None]:
        with asyncio.Runner() as runner:
            agen = self._iterate_async(source)
            try:
                while not isinstance(item := runner.run(_next_or_end(agen)), _End):
                    yield item
            finally:
                self._closed = True
                runner.run(agen.aclose())

    def _claim(self) -> object:
        if self._claimed:
            raise UserError("a StreamWrapper can be consumed only once")
        self._claimed = True
        self._current = self._source
        return self._source
