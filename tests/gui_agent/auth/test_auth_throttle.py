"""Failed logins: a few are free, then each failure doubles the wait; success clears it."""

from __future__ import annotations

import pytest

from gui_agent.auth import LoginThrottle
from gui_agent.exceptions import ConfigError


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def throttle(clock: Clock, **options: float) -> LoginThrottle:
    return LoginThrottle(free_attempts=3, base_delay_s=1.0, max_delay_s=8.0, clock=clock, **options)  # type: ignore[arg-type]


def test_free_attempts_then_doubling_waits_up_to_the_cap() -> None:
    clock = Clock()
    t = throttle(clock)
    waits = []
    for _ in range(8):
        t.failed("user:ana")
        waits.append(t.retry_after("user:ana"))
    assert waits == [0.0, 0.0, 0.0, 1.0, 2.0, 4.0, 8.0, 8.0]
    clock.now += 5.0
    assert t.retry_after("user:ana") == pytest.approx(3.0)
    clock.now += 3.0
    assert t.retry_after("user:ana") == 0.0


def test_success_clears_and_keys_are_independent() -> None:
    clock = Clock()
    t = throttle(clock)
    for _ in range(5):
        t.failed("user:ana", "ip:10.0.0.7")
    assert t.retry_after("user:ana") == 2.0
    assert t.retry_after("user:bob") == 0.0
    assert t.retry_after("user:bob", "ip:10.0.0.7") == 2.0  # the worst of the keys
    t.succeeded("user:ana")
    assert t.retry_after("user:ana") == 0.0
    assert t.retry_after("ip:10.0.0.7") == 2.0


def test_old_failures_are_forgotten() -> None:
    clock = Clock()
    t = throttle(clock, window_s=60.0)
    for _ in range(4):
        t.failed("user:ana")
    clock.now += 61.0
    t.failed("user:ana")  # counts as the first failure again
    assert t.retry_after("user:ana") == 0.0


def test_memory_is_bounded_oldest_first() -> None:
    clock = Clock()
    t = throttle(clock, max_keys=2)
    for key in ("a", "b", "c"):
        for _ in range(4):
            t.failed(key)
    assert t.retry_after("a") == 0.0  # dropped
    assert t.retry_after("b") == 1.0 and t.retry_after("c") == 1.0


def test_nonsense_settings_are_refused() -> None:
    with pytest.raises(ConfigError):
        LoginThrottle(base_delay_s=0)
    with pytest.raises(ConfigError):
        LoginThrottle(base_delay_s=5, max_delay_s=1)
    with pytest.raises(ConfigError):
        LoginThrottle(max_keys=0)
