"""Run a coroutine up to its first wait, and pay for a timeout timer only if it waits.

Many tool calls finish without ever waiting (a calculation, a lookup in memory). asyncio
can only interrupt a coroutine where it awaits, so a timeout timer armed around such a call
can never fire: it only costs (about 4 µs, on a turn budget of 100). `start` runs the
coroutine synchronously until it first waits or ends:

    started = start(coroutine)
    if started.done:
        value = started.result()
    else:
        async with asyncio.timeout(...):
            value = await started.rest()

`rest()` goes on exactly as `await coroutine` would have after its first suspension: what
the event loop sends and throws (cancellation included) reaches the coroutine, and what it
returns or raises comes back out.

The coroutine runs in the caller's task from the start, so await `rest()` in that same
task: `asyncio.current_task()` (and any `asyncio.timeout` the coroutine enters before it
first waits) means the caller's task. Handing `rest()` to a new task would leave those
pointing at the wrong one, which is why parallel tool calls still get a task each.
"""

from __future__ import annotations

import types
from collections.abc import Coroutine, Generator
from typing import Any, Generic, TypeVar

__all__ = ["Started", "start"]

T = TypeVar("T")


class Started(Generic[T]):
    """A coroutine run up to its first suspension (or to its end)."""

    __slots__ = ("_coroutine", "_yielded", "done", "value")

    def __init__(self, coroutine: Coroutine[Any, Any, T]) -> None:
        self._coroutine = coroutine
        self._yielded: object = None
        self.done = False
        self.value: T | None = None

    def result(self) -> T:
        """The return value of a coroutine that finished while starting."""
        if not self.done:
            raise RuntimeError("the coroutine is still waiting; await rest() instead")
        return self.value  # type: ignore[return-value]  # T itself may be None

    def rest(self) -> Coroutine[Any, Any, T]:
        """The rest of a coroutine that is waiting, to await in the task that started it."""
        if self.done:
            raise RuntimeError("the coroutine already finished; read result() instead")
        return _resume(self._coroutine, self._yielded)


def start(coroutine: Coroutine[Any, Any, T]) -> Started[T]:
    """Run `coroutine` until it first waits or ends. Exceptions it raises on the way
    propagate."""
    started = Started(coroutine)
    try:
        started._yielded = coroutine.send(None)
    except StopIteration as stop:
        started.done = True
        started.value = stop.value
    return started


@types.coroutine
def _delegate(coroutine: Coroutine[Any, Any, T], yielded: object) -> Generator[Any, Any, T]:
    # `yield from`, for a coroutine that has already been started: hand what it waits on
    # to the event loop, and what the loop sends or throws back to it.
    while True:
        try:
            sent = yield yielded
        except GeneratorExit:
            coroutine.close()
            raise
        except BaseException as error:
            try:
                yielded = coroutine.throw(error)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
        else:
            try:
                yielded = coroutine.send(sent)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]


async def _resume(coroutine: Coroutine[Any, Any, T], yielded: object) -> T:
    return await _delegate(coroutine, yielded)
