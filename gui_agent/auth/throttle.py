"""Slowing down password guessing: failed logins per user name and per client address.

A few failures are free (typos happen). After that each further failure makes the next
attempt wait twice as long as the one before, up to `max_delay_s`; while a key waits, login
is refused without checking the password at all, which also keeps a flood of guesses from
burning CPU on password hashing. A success clears the key. Failures older than `window_s`
are forgotten.

A caller may count an attempt as failed before checking its password (so that guesses sent
all at once meet the throttle as guesses in a row do) and take it back if the password was
right. Taking back is complete: a key that `forgive` lowers waits as if the forgiven
failures had never happened, its wait running from the last failure that was not theirs,
so a correct password never starts, restarts or lengthens anyone's wait.

Per user name stops guessing one account from many addresses; per address stops one
client from trying many names. The price of the first: someone who keeps failing on your
name makes you wait too, at most `max_delay_s` after they stop.

State lives in memory, per server process, bounded to `max_keys` keys (the oldest are
dropped first); it is not shared between processes and is gone after a restart.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field

from gui_agent.exceptions import ConfigError

__all__ = ["LoginThrottle"]


_RECENT = 32
"""Failures whose times each key keeps: more than the count that reaches any sensible
`max_delay_s` (doubling from `base_delay_s`), since only the latest failures that were not
forgiven decide when a wait ends. Older ones are only counted."""


@dataclass(slots=True, eq=False)
class _Failure:
    """One failed attempt, the same object in every key it was counted against (an address
    and its name-at-address key), so that `succeeded` on one key marks it for `forgive` on
    the others."""

    at: float
    signed_in: bool = False


@dataclass(slots=True)
class _Record:
    failures: int
    last_failure: float
    recent: list[_Failure] = field(default_factory=list)
    """The latest failures (at most `_RECENT`), oldest first."""


class LoginThrottle:
    """Counts failed logins per key (e.g. ``"user:ana"``, ``"ip:10.0.0.7"``).

    Thread-safe: the page checks passwords in worker threads.
    """

    def __init__(
        self,
        *,
        free_attempts: int = 5,
        base_delay_s: float = 1.0,
        max_delay_s: float = 300.0,
        window_s: float = 900.0,
        max_keys: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if free_attempts < 0 or base_delay_s <= 0 or max_delay_s < base_delay_s:
            raise ConfigError("login throttle: need free_attempts >= 0, 0 < base <= max delay")
        if window_s <= 0 or max_keys < 1:
            raise ConfigError("login throttle: window_s and max_keys must be positive")
        self.free_attempts = free_attempts
        self.base_delay_s = base_delay_s
        self.max_delay_s = max_delay_s
        self.window_s = window_s
        self.max_keys = max_keys
        self._clock = clock
        self._records: OrderedDict[str, _Record] = OrderedDict()
        self._lock = threading.Lock()

    def retry_after(self, *keys: str) -> float:
        """Seconds until any attempt for `keys` is allowed again; 0.0 when it is now."""
        now = self._clock()
        wait = 0.0
        with self._lock:
            for key in keys:
                record = self._live(key, now)
                if record is not None:
                    wait = max(wait, record.last_failure + self._delay(record.failures) - now)
        return max(wait, 0.0)

    def failed(self, *keys: str) -> None:
        """Count one failed attempt against each of `keys`."""
        now = self._clock()
        failure = _Failure(now)
        with self._lock:
            for key in keys:
                record = self._live(key, now)
                if record is None:
                    record = self._records[key] = _Record(0, now)
                record.failures += 1
                record.last_failure = now
                record.recent.append(failure)
                del record.recent[:-_RECENT]
                self._records.move_to_end(key)
            while len(self._records) > self.max_keys:
                self._records.popitem(last=False)

    def succeeded(self, *keys: str) -> int:
        """Forget the failures of `keys`; how many there were (of the first key). Their
        failures stay counted on other keys until `forgive` takes them off there."""
        now = self._clock()
        forgotten = 0
        with self._lock:
            for index, key in enumerate(keys):
                record = self._live(key, now)
                if record is not None and index == 0:
                    forgotten = record.failures
                if record is not None:
                    for failure in record.recent:
                        failure.signed_in = True
                self._records.pop(key, None)
        return forgotten

    def forgive(self, key: str, failures: int) -> None:
        """Take `failures` off `key`'s count: someone who then signed in made them (an
        address's count forgets one person's typos, not everyone's guesses from it).

        The wait runs again from the last failure that is still counted. Otherwise the
        attempt that signed in, counted as failed while its password was checked, would
        leave the wait starting at that login: each correct password would lock out again
        everyone who shares the address (a NAT, a proxy)."""
        now = self._clock()
        with self._lock:
            record = self._live(key, now)
            if record is None or failures <= 0:
                return
            record.failures -= failures
            if record.failures <= 0:
                del self._records[key]
                return
            # Newest first: the attempt that just signed in is among the latest failures.
            taken: list[_Failure] = []
            for failure in reversed(record.recent):
                if failure.signed_in and len(taken) < failures:
                    taken.append(failure)
            if not taken:
                return
            record.recent = [failure for failure in record.recent if failure not in taken]
            if record.recent:
                record.last_failure = max(failure.at for failure in record.recent)
            else:  # every failure it kept was forgiven; the older ones came before them all
                record.last_failure = min(failure.at for failure in taken)

    def _delay(self, failures: int) -> float:
        over = failures - self.free_attempts
        if over <= 0:
            return 0.0
        return min(self.max_delay_s, self.base_delay_s * 2.0 ** min(over - 1, 62))

    def _live(self, key: str, now: float) -> _Record | None:
        record = self._records.get(key)
        if record is not None and now - record.last_failure > self.window_s:
            del self._records[key]
            return None
        return record
