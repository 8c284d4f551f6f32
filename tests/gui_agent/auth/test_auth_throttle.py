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


def sign_in(t: LoginThrottle, address: str, name: str) -> None:
    """What the API's login does with a right password: the attempt was counted as failed
    while the password was checked; it then forgets the name's failures from the address."""
    t.forgive(address, t.succeeded(f"{address}\0{name}"))


def test_a_right_password_neither_starts_nor_restarts_the_wait() -> None:
    clock = Clock()
    t = throttle(clock)
    for n in range(5):  # five names guessed once each from one address: past 3 free
        t.failed("ip:10.0.0.7", f"ip:10.0.0.7\0guess{n}")
    assert t.retry_after("ip:10.0.0.7") == 2.0
    clock.now += 2.0  # the wait has run out
    t.failed("ip:10.0.0.7", "ip:10.0.0.7\0ana")  # counted while ana's password is checked
    sign_in(t, "ip:10.0.0.7", "ana")
    assert t.retry_after("ip:10.0.0.7") == 0.0  # bo, behind the same NAT, gets in
    clock.now += 1.0
    t.failed("ip:10.0.0.7", "ip:10.0.0.7\0bo")
    sign_in(t, "ip:10.0.0.7", "bo")
    assert t.retry_after("ip:10.0.0.7") == 0.0
    t.failed("ip:10.0.0.7", "ip:10.0.0.7\0guess5")  # the guesses still count: 6th failure
    assert t.retry_after("ip:10.0.0.7") == 4.0


def test_a_right_password_keeps_the_wait_of_guesses_made_while_it_was_checked() -> None:
    """Ana's two typos come off the address's count, and the wait runs from the last guess
    that was not hers, even one made while her password was being checked."""
    clock = Clock()
    t = throttle(clock)
    for n in range(3):
        t.failed("ip:10.0.0.7", f"ip:10.0.0.7\0guess{n}")
    clock.now += 1.0
    t.failed("ip:10.0.0.7", "ip:10.0.0.7\0ana")  # a typo
    t.failed("ip:10.0.0.7", "ip:10.0.0.7\0ana")  # her right password, being checked
    clock.now += 0.5
    t.failed("ip:10.0.0.7", "ip:10.0.0.7\0guess3")  # meanwhile, a guess: 6 failures
    sign_in(t, "ip:10.0.0.7", "ana")  # 4 left: one past the free three
    assert t.retry_after("ip:10.0.0.7") == 1.0
    clock.now += 1.0
    assert t.retry_after("ip:10.0.0.7") == 0.0
