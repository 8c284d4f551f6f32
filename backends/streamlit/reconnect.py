"""A tab that lost the server (it restarted, or the network dropped for longer than its event
stream's own reconnects cover) tries again by itself, as the chat page's tabs do: it says
what broke and when it tries again, waits, and runs the script again, which reads the chat
afresh. The waits grow, up to `RETRY_WAITS_S[-1]`, and start over once the server answers.
What the person typed stays in its box (the script running again keeps the widgets)."""

from __future__ import annotations

import time
from typing import NoReturn

import streamlit as st

from backends.api.client import ConnectionFailed
from backends.streamlit.view import plain_markdown

__all__ = ["RETRY_WAITS_S", "reached", "try_again_later"]

RETRY_WAITS_S = (1.0, 2.0, 4.0, 8.0, 15.0)
"""How long a tab waits before trying the server again, one after another."""

_TRIES = "unreachable_tries"  # (session state: tries in a row that found no server)


def try_again_later(what: str, error: ConnectionFailed) -> NoReturn:
    """Say `what` failed and why, wait, and run the script again."""
    state = st.session_state
    tries = int(state.get(_TRIES, 0))
    wait = RETRY_WAITS_S[min(tries, len(RETRY_WAITS_S) - 1)]
    state[_TRIES] = tries + 1
    st.warning(plain_markdown(f"{what}: {error}. Trying again in {wait:.0f} s…"))
    time.sleep(wait)
    st.rerun()


def reached() -> None:
    """The server answered this run: the next failure waits the shortest time again."""
    st.session_state.pop(_TRIES, None)
