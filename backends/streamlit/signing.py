"""Who uses the Streamlit front end: signing in (a form when the GuiAgent server has users),
signing out, and what goes when the person changes.

The tab keeps one API client whose token is the person's. What the page kept for that
person (the chat open, a replay, an export waiting, messages waiting, how far events were
read, drafts and widgets' values) goes when they sign out, or when another person signs in
on the tab after their sign-in ended; what is the tab's, whoever signs in, stays
(`_TAB_KEYS`).
"""

from __future__ import annotations

import logging

import streamlit as st

from backends.api.client import ClientError, GuiAgentClient, RateLimited, Unauthorized
from backends.streamlit.view import plain_markdown

__all__ = ["sign_in", "sign_out", "signed_in_as"]

logger = logging.getLogger(__name__)


def sign_in(client: GuiAgentClient) -> bool:
    """True once this browser session holds a token (a form first when the server has
    users)."""
    state = st.session_state
    if state.get("user"):
        return True
    try:
        mode = state.auth = client.health().auth
        if mode == "none":
            signed_in_as(client.login().user)
            return True
    except ClientError as error:
        st.error(plain_markdown(f"Cannot reach GuiAgent at {client.base_url}: {error}"))
        return False
    if mode == "proxy":
        st.error("This GuiAgent server signs people in through its proxy: use its own page.")
        return False
    if problem := state.pop("sign_out_problem", None):
        st.warning(plain_markdown(problem))
    with st.form("login"):
        st.subheader("Sign in to GuiAgent")
        name = st.text_input("User name")
        password = st.text_input("Password", type="password")
        submitted = st.form_submit_button("Sign in", type="primary")
    if submitted:
        try:
            user = client.login(name, password).user
        except RateLimited as error:
            st.error(f"Too many attempts: try again in {error.retry_after or 60:.0f} s.")
        except Unauthorized:
            st.error("Wrong user name or password.")
        except ClientError as error:
            st.error(plain_markdown(str(error)))
        else:
            signed_in_as(user)
            st.rerun()
    return False


_TAB_KEYS = frozenset({"client", "offer", "auth"})
"""What this tab keeps whoever signs in: the API client (its token is the new user's), the
server's roles and models, and how it signs people in."""


def signed_in_as(user: str) -> None:
    """Note who is signed in; when it is not who was before (their sign-in ended, and
    another person signed in on this tab), everything kept for the one before goes: the
    chat open, a replay, an export waiting, messages waiting, how far events were read,
    drafts and widgets' values."""
    state = st.session_state
    if state.get("owner") not in (None, user):
        logger.info("Another user signed in on this tab: the previous user's state is cleared")
        _forget_person()
    state.owner = user
    state.user = user


def _forget_person() -> None:
    """Everything kept for the person signed in goes (see `signed_in_as`)."""
    state = st.session_state
    for key in list(state.keys()):
        if key not in _TAB_KEYS:
            del state[key]


def sign_out(client: GuiAgentClient) -> None:
    """Sign out's callback: the token signed out on the server (refused from then on) and
    dropped here, and everything kept for the person gone, so the script, run again, asks
    who signs in. The server not reached, the sign-out here happens all the same (this
    tab's token is forgotten), and the sign-in form says the server was not told (the
    token stays good there until it expires)."""
    problem = None
    try:
        client.logout()
    except ClientError as error:
        logger.warning("The server was not told of a sign-out: %s", error)
        problem = f"Signed out here, but the server could not be told: {error}"
    client.token = None
    _forget_person()
    if problem is not None:
        st.session_state.sign_out_problem = problem
