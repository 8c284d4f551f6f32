"""The page's login check (`backends.server._password_check`, what Gradio awaits for each
sign-in) under a burst of guesses."""

from __future__ import annotations

import asyncio
from pathlib import Path

from backends.server import _password_check
from gui_agent.auth import LoginThrottle, UserDB

PASSWORD = "alice-password-1"


def test_a_burst_of_page_logins_is_throttled_like_logins_in_a_row(tmp_path: Path) -> None:
    """Guesses that arrive together are counted as they are let through: past the free
    attempts the rest wait, so even the right password at the end of the burst is not
    checked (it is, once the wait is over)."""
    users = UserDB(tmp_path / "users.json")
    users.add("alice", PASSWORD)
    now = [1_000.0]
    throttle = LoginThrottle(clock=lambda: now[0])
    check = _password_check(users, throttle)

    async def burst() -> list[bool]:
        guesses = [f"guess-{n}" for n in range(12)]
        return await asyncio.gather(*(check("alice", p) for p in [*guesses, PASSWORD]))

    answers = asyncio.run(burst())
    assert answers == [False] * 13
    assert throttle.retry_after("alice") > 0
    now[0] += throttle.max_delay_s
    assert asyncio.run(check("alice", PASSWORD)) is True
    assert throttle.retry_after("alice") == 0.0  # a success clears the count


def test_the_right_password_after_a_few_typos_gets_in(tmp_path: Path) -> None:
    users = UserDB(tmp_path / "users.json")
    users.add("alice", PASSWORD)
    throttle = LoginThrottle(clock=lambda: 1_000.0)
    check = _password_check(users, throttle)
    typos = [asyncio.run(check("alice", "alice-password-2")) for _ in range(4)]
    assert typos == [False] * 4
    assert asyncio.run(check("alice", PASSWORD)) is True
