"""Pending approval requests of one session: an architecture waits, a person decides."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Literal

from gui_agent.exceptions import InvalidRequest
from schema import ApprovalDecision


def decision_of(value: object) -> ApprovalDecision:
    """`value` as an ApprovalDecision: the member itself, or its value or name in any case
    ("allow_once", "ALLOW_ONCE"); anything else is InvalidRequest naming the choices.

    A plain string is what code in a dynamic language passes. Taken as it was, it went on
    until the step that reads the decision, which then failed the whole turn."""
    if isinstance(value, ApprovalDecision):
        return value
    if isinstance(value, str):
        key = value.strip().lower()
        for decision in ApprovalDecision:
            if key == decision.value:
                return decision
    choices = ", ".join(repr(decision.value) for decision in ApprovalDecision)
    raise InvalidRequest(f"an approval decision is one of {choices}, not {value!r}")


@dataclass(frozen=True, slots=True)
class Verdict:
    decision: ApprovalDecision
    note: str | None = None
    by: Literal["user", "policy", "timeout"] = "user"


class ApprovalBroker:
    """Holds one future per open approval. No answer in time means deny. (Code that
    cannot ask anyone denies at once: `chat_sync` without an `approve` function.)"""

    def __init__(self) -> None:
        self._pending: dict[str, asyncio.Future[Verdict]] = {}

    @property
    def pending(self) -> tuple[str, ...]:
        return tuple(self._pending)

    def open(self, approval_id: str) -> None:
        """Register a request before it is announced, so an early answer is not lost."""
        self._pending[approval_id] = asyncio.get_running_loop().create_future()

    async def wait(self, approval_id: str, timeout_s: float | None) -> Verdict:
        future = self._pending[approval_id]
        try:
            async with asyncio.timeout(timeout_s):
                return await asyncio.shield(future)
        except TimeoutError:
            return Verdict(ApprovalDecision.DENY, "no answer in time", by="timeout")
        finally:
            self._pending.pop(approval_id, None)
            if not future.done():
                future.cancel()

    def resolve(
        self,
        approval_id: str,
        decision: ApprovalDecision,
        note: str | None,
        *,
        by: Literal["user", "policy"] = "user",
    ) -> bool:
        """Answer a request; False when no such request is open."""
        future = self._pending.get(approval_id)
        if future is None or future.done():
            return False
        future.set_result(Verdict(decision, note, by))
        return True
