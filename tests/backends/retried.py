"""A model whose call is rate limited once, paced by the test: it announces that it is asked
again (attempt 2 of 4, in 20 s), then writes its first words only when the test says so,
and its last ones after a second word from the test. Without the pauses a test could not
look at a chat while its reply waits on a retry, nor once the reply has begun."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from typing import Any

from connectors.function import FunctionInfo, FunctionModel
from schema import Message, ModelRetryNotice

RETRY = ModelRetryNotice(attempt=2, max_attempts=4, wait_s=20.0, reason="rate limited (HTTP 429)")
"""What the model's provider says before it asks again."""

SAID = "Rate limited (HTTP 429): asking again in 20 s (attempt 2 of 4)…"
"""How every front end words `RETRY` (`gui_agent.retry_words`), the whole wait left."""

FIRST, LAST = "Hello ", "after the wait."
"""The reply's text: `FIRST` once `begin` is set, `LAST` once `end` is."""


class RetriedModel:
    """The model (`provider`, named `name`), and the two pauses of each call. The events
    belong to the loop the model runs on: set them there (`on_loop`)."""

    def __init__(self, name: str = "retried") -> None:
        self.begin = asyncio.Event()
        self.end = asyncio.Event()
        self.provider = FunctionModel(self._reply, name=name)

    def _reply(self, messages: list[Message], info: FunctionInfo) -> AsyncIterator[Any]:
        return self._parts()

    async def _parts(self) -> AsyncIterator[Any]:
        yield RETRY
        await self.begin.wait()
        yield FIRST
        await self.end.wait()
        yield LAST

    def release(self, *, whole: bool = False) -> Coroutine[Any, Any, None]:
        """A coroutine that lets the reply begin (and end too, if `whole`), for the loop
        the model runs on (`ServerThread.call`)."""

        async def set_events() -> None:
            self.begin.set()
            if whole:
                self.end.set()

        return set_events()
