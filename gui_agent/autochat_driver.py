"""AutoChat, driven: the interpreter acting on `gui_agent.autochat`'s decisions.

Between turns: the next prompt (a queued message first, else an automatic turn announced
and, after its delay, started); during an automatic turn: the timer that stops it where the
time budget ends. `autochat.py` holds the pure policy (counters, stop reasons); this layer
holds what needs the event loop and the event stream. One layer of `Interpreter` (see
`gui_agent.interpreter`).
"""

from __future__ import annotations

import asyncio

from gui_agent.autochat import AutoRun
from gui_agent.session import written_by_person
from gui_agent.tracking import EventTracking
from schema import (
    AutoChatStopped,
    AutoChatStopReason,
    AutoChatTurn,
    Message,
    RunOutcome,
)


class AutoChatDriver(EventTracking):
    """Starts, times and ends a session's AutoChat runs. The attributes are set by
    `Interpreter.__init__`."""

    _auto: AutoRun
    _wake: asyncio.Event  # set to end a wait between turns (a message, AutoChat switched off)
    _deadline: asyncio.TimerHandle | None  # the time budget's end (a turn's)
    _task: asyncio.Task[None] | None  # the run task
    _stopping: asyncio.Task[None] | None  # the run task a Stop is ending
    _stop_reason: str
    _unfiled: Message | None  # the person's message a new task has not filed

    def _latest_request(self) -> str | None:
        """The text of the person's latest message: queued, about to be taken up, or in
        the history; else the goal kept (none written yet)."""
        for message in reversed(self.session.inbox):
            if written_by_person(message):
                return message.content
        if self._unfiled is not None and written_by_person(self._unfiled):
            return self._unfiled.content
        index = self.session.last_user_index()
        return self.session.goal if index is None else self.session.history[index].content

    async def _next_prompt(self, outcome: RunOutcome) -> Message | None:
        if self.session.inbox:
            return self.session.inbox.popleft()
        if not self._auto.active:
            return None
        stop = self._auto.stop_reason(self.session, outcome)
        if stop is not None:
            self._end_autochat(*stop)
            return None
        self._auto.announce()
        self._publish_auto_turn()
        if self.session.autochat.delay_s > 0:
            # A new Event, not the last one cleared: that one may be bound to the event loop
            # of an earlier `asyncio.run` (two `chat_sync` calls), and waiting on it would fail.
            self._wake = asyncio.Event()
            await self._wait_delay()
        if self.session.inbox:
            return self.session.inbox.popleft()
        if not self._auto.active:
            return None
        return self._auto.continuation(self.session)

    async def _wait_delay(self) -> None:
        """Wait out AutoChat's delay before the turn it announced; a wake ends it (the
        person's message, AutoChat switched off). A delay changed meanwhile counts from when
        the wait began: `update` wakes the wait to look again."""
        loop = asyncio.get_running_loop()
        began = loop.time()
        while True:
            delay = self.session.autochat.delay_s
            left = delay - (loop.time() - began)
            if left <= 0:
                return
            try:
                async with asyncio.timeout(left):
                    await self._wake.wait()
            except TimeoutError:
                return
            changed = self.session.autochat.delay_s != delay
            if not changed or self.session.inbox or not self._auto.active:
                return
            self._wake.clear()

    def _arm_deadline(self, run_id: str) -> None:
        """For the automatic turn `run_id` under a time budget: a timer that stops the turn
        where the budget ends, so a long tool or an approval nobody answers cannot run past
        it. Armed again when the budget is changed during the turn (`update`); disarmed
        when the turn ends, and when the AutoChat run it belongs to ends (`_end_autochat`):
        a run the person's message starts meanwhile has a clock of its own."""
        self._disarm_deadline()
        budget = self.session.autochat.time_budget_s
        if budget is None or not self._auto.active:
            return
        left = budget - (self._auto.clock() - self._auto.started_at)
        loop = asyncio.get_running_loop()
        self._deadline = loop.call_later(max(left, 0.0), self._time_up, run_id)

    def _disarm_deadline(self) -> None:
        deadline, self._deadline = self._deadline, None
        if deadline is not None:
            deadline.cancel()

    def _time_up(self, run_id: str) -> None:
        self._deadline = None
        task = self._task
        if run_id != self._run_id or not self._auto.active or task is None or task.done():
            return
        budget = self.session.autochat.time_budget_s or 0.0
        self._end_autochat(
            AutoChatStopReason.TIME_BUDGET,
            f"{budget:g}s, during an automatic turn, which was stopped",
        )
        self._stop_reason = "AutoChat's time budget ran out"
        self._stopping = task
        task.cancel()

    def _publish_auto_turn(self) -> None:
        max_turns = self.session.autochat.max_turns
        self._publish(
            AutoChatTurn(
                turn=self._auto.turns,
                max_turns=max_turns,
                remaining=max(0, max_turns - self._auto.turns),
            )
        )

    def _end_autochat(self, reason: AutoChatStopReason, detail: str) -> None:
        self._disarm_deadline()  # its time budget ended with it
        turns = self._auto.turns_run
        self._auto.end(self.session, reason)
        self._publish(AutoChatStopped(reason=reason, turns=turns, detail=detail))
