"""Waiting through a cancel: what must not be cut short (a store write, a process start, the
clean-up after a Stop) is waited for to its end, and the cancel is raised after."""

from __future__ import annotations

import asyncio
from typing import Any

__all__ = ["uninterrupted"]


async def uninterrupted(future: asyncio.Future[Any]) -> bool:
    """Wait until `future` is done, also when the waiting task is cancelled meanwhile (the
    future goes on). Returns whether it was: the caller then raises CancelledError itself,
    once it has finished what must not be cut short. `future`'s own exception is not raised
    here."""
    cancelled = False
    while not future.done():
        try:
            await asyncio.wait((future,))
        except asyncio.CancelledError:
            cancelled = True
    return cancelled
