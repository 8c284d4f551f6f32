"""Signing in to the React front end, kept for the tab: a reload keeps the person signed in
(the token is in the tab's sessionStorage, never in localStorage), a login that expired asks
to sign in again, and Sign out tells the server and forgets the token."""

from __future__ import annotations

import time

import pytest
from playwright.sync_api import Page, expect

from gui_agent.auth import TokenService
from tests.backends.api.live import SECRET, Backend
from tests.backends.react.test_react_page import (  # (the module's server and tab)
    PASSWORD,
    backend,
    page,
    signed_in,
)

pytestmark = pytest.mark.browser
__all__ = ["backend", "page"]  # fixtures, used by name

KEPT = "Object.fromEntries(Object.entries(sessionStorage))"


def kept_tokens(page: Page) -> list[str]:
    """The tokens the tab keeps in sessionStorage (checked: none in localStorage)."""
    assert page.evaluate("localStorage.length") == 0  # never kept for every tab
    stored: dict[str, str] = page.evaluate(KEPT)
    return [value for value in stored.values() if "token" in value]


def sign_in_form(page: Page) -> None:
    expect(page.get_by_role("heading", name="Sign in to GuiAgent")).to_be_visible()
    expect(page.get_by_text("Signed in as", exact=False)).to_have_count(0)


def test_a_reload_keeps_the_person_signed_in_in_that_tab_only(page: Page, backend: Backend) -> None:
    signed_in(page)
    assert len(kept_tokens(page)) == 1
    page.reload()
    expect(page.get_by_text("Signed in as ada")).to_be_visible()  # no sign-in form
    expect(page.get_by_role("button", name="New chat")).to_be_visible()
    other = page.context.new_page()  # another tab: its own sign-in
    other.goto(f"{backend.base_url}/react/")
    sign_in_form(other)


def test_a_kept_login_that_expired_asks_to_sign_in_again(page: Page, backend: Backend) -> None:
    signed_in(page)
    assert len(kept_tokens(page)) == 1
    assert backend.users is not None
    fingerprint = backend.users.check("ada", PASSWORD)
    an_hour_ago = TokenService(SECRET, ttl_s=60, clock=lambda: time.time() - 3600)
    expired = an_hour_ago.issue("ada", password_fingerprint=fingerprint)
    page.evaluate(
        """(token) => {
          for (const key of Object.keys(sessionStorage)) {
            const kept = JSON.parse(sessionStorage.getItem(key));
            sessionStorage.setItem(key, JSON.stringify({ ...kept, token }));
          }
        }""",
        expired,
    )
    page.reload()
    sign_in_form(page)
    assert kept_tokens(page) == []  # dropped
    signed_in(page)  # and signing in works as ever


def test_sign_out_tells_the_server_and_forgets_the_login(page: Page, backend: Backend) -> None:
    signed_in(page)
    with page.expect_request(
        lambda request: request.method == "POST" and request.url.endswith("/api/logout")
    ) as told:
        page.get_by_role("button", name="Sign out").click()
    answer = told.value.response()
    assert answer is not None and answer.status == 204
    sign_in_form(page)
    expect(page.get_by_label("User name")).to_have_value("")
    assert kept_tokens(page) == []
    page.reload()  # nothing kept: still signed out
    sign_in_form(page)
    signed_in(page)


def test_sign_out_forgets_the_login_even_when_the_server_cannot_be_told(page: Page) -> None:
    signed_in(page)
    page.route("**/api/logout", lambda route: route.abort())
    page.get_by_role("button", name="Sign out").click()
    sign_in_form(page)
    expect(page.get_by_role("status")).to_contain_text(
        "Signed out on this tab, but the server could not be told"
    )
    assert kept_tokens(page) == []
