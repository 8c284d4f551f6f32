"""Slowing down password guessing: failed logins per user name and per client address.

A few failures are free (typos happen). After that each further failure makes the next
attempt wait twice as long as the one before, up to `max_delay_s`; while a key waits, login
is refused without checking the password at all, which also keeps a flood of guesses from
burning CPU on password hashing. A success clears the key. Failures older than `window_s`
are forgotten.

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
from dataclasses import dataclass

from gui_agent.exceptions import ConfigError

__all__ = ["LoginThrottle"]


@dataclass(slots=True)
class _Record:
    failures: int
    last_failure: float


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
        with self._lock:
            for key in keys:
                record = self._live(key, now)
                if record is None:
                    record = self._records[key] = _Record(0, now)
                record.failures += 1
                record.last_failure = now
                self._records.move_to_end(key)
            while len(self._records) > self.max_keys:
                self._records.popitem(last=False)

    def succeeded(self, *keys: str) -> int:
        """Forget the failures of `keys`; how many there were (of the first key)."""
        now = self._clock()
        forgotten = 0
        with self._lock:
            for index, key in enumerate(keys):
                record = self._live(key, now)
                if record is not None and index == 0:
                    forgotten = record.failures
                self._records.pop(key, None)
        return forgotten

    def forgive(self, key: str, failures: int) -> None:
        """Take `failures` off `key`'s count: someone who then signed in made them (an
        address's count forgets one person's typos, not everyone's guesses from it)."""
        now = self._clock()
        with self._lock:
            record = self._live(key, now)
            if record is None or failures <= 0:
                return
            record.failures -= failures
            if record.failures <= 0:
                del self._records[key]

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
