"""Password spraying with an account of one's own: wrong passwords for other names from one
address, each name tried a few times (under its own free attempts), and now and then a
correct login to one's own account. That login must not wipe the address's count of the
other guesses; a person's own typos before signing in are forgiven."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from backends.api.auth import LoginThrottles
from gui_agent.auth import LoginThrottle
from tests.backends.api.live import Backend, running_backend

MALLORY = ("mallory", "mallory's own password")
ADDRESS_FREE = 20


def frozen() -> float:
    return 1000.0  # the throttles' clock stands still: nothing expires during the test


@pytest.fixture
def guarded(tmp_path: Path) -> Iterator[Backend]:
    throttles = LoginThrottles(
        by_user=LoginThrottle(clock=frozen),
        by_address=LoginThrottle(free_attempts=ADDRESS_FREE, clock=frozen),
    )
    users = [MALLORY, ("ana", "ana's password"), ("bo", "bo's password")]
    with running_backend(tmp_path, users=users, throttles=throttles) as backend:
        yield backend


def login(http: httpx.Client, name: str, password: str) -> int:
    return http.post("/api/login", json={"username": name, "password": password}).status_code


def test_a_login_to_ones_own_account_does_not_wipe_guesses_at_other_names(
    guarded: Backend,
) -> None:
    with httpx.Client(base_url=guarded.base_url, timeout=30) as http:
        statuses = []
        for round_ in range(10):
            for n in range(3):  # three names a round, each under its own five free attempts
                statuses.append(login(http, f"victim{round_}-{n}", "Winter2026!"))
            assert login(http, *MALLORY) in (200, 429)
        # 30 wrong guesses from one address: past its 20 free attempts, it waits
        assert statuses[:ADDRESS_FREE] == [401] * ADDRESS_FREE
        assert 429 in statuses[ADDRESS_FREE:]
        assert login(http, "ana", "a guess") == 429


def test_a_persons_own_typos_are_forgiven_when_they_sign_in(guarded: Backend) -> None:
    """Colleagues behind one address mistype 18 times (three names, six each: a name's
    count stops at its sixth failure, after which it waits); bo mistypes once, then signs
    in. Only bo's own failures come off the address's count: 18 left, so three more
    mistakes are checked (to 21) and the next one waits."""
    free_per_name = LoginThrottle().free_attempts
    with httpx.Client(base_url=guarded.base_url, timeout=30) as http:
        for name in ("ana", "cy", "dee"):
            for _ in range(free_per_name + 1):
                assert login(http, name, "typo") == 401
        assert login(http, "bo", "typo") == 401
        assert login(http, "bo", "bo's password") == 200
        after = [login(http, name, "typo") for name in ("eve", "fay", "gus", "hal")]
        assert after == [401, 401, 401, 429]


class Clock:
    """The throttles' clock, moved by the test: waits run out without sleeping."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_right_password_does_not_lock_the_address_again(tmp_path: Path) -> None:
    """People behind one NAT: guesses at many names lock the address; once that wait has
    run out, alice signs in, then at once carol, then alice again. Each correct login is
    let in, and none of them starts a new wait for the others; the guesses still count."""
    clock = Clock()
    throttles = LoginThrottles(
        by_user=LoginThrottle(clock=clock),
        by_address=LoginThrottle(free_attempts=ADDRESS_FREE, clock=clock),
    )
    users = [("alice", "alice's password"), ("carol", "carol's password")]
    with (
        running_backend(tmp_path, users=users, throttles=throttles) as backend,
        httpx.Client(base_url=backend.base_url, timeout=30) as http,
    ):
        for n in range(ADDRESS_FREE + 2):
            assert login(http, f"nobody{n}", "wrong") == 401
            clock.now += 10.0  # each guess after the wait of the one before
        clock.now -= 10.0
        assert login(http, "nobody-x", "wrong") == 429  # 22 failures: a 2 s wait
        clock.now += 2.0
        assert login(http, "alice", "alice's password") == 200
        assert login(http, "carol", "carol's password") == 200
        clock.now += 1.0
        assert login(http, "alice", "alice's password") == 200
        assert login(http, "nobody-y", "wrong") == 401  # 23rd failure: a 4 s wait
        assert login(http, "nobody-z", "wrong") == 429
