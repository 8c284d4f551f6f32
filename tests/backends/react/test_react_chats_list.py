"""The React front end's chats list when the person has more chats than it lists at first
(100): it says so, and "Show more chats" lists the older ones, which then stay listed as
the list follows changes made elsewhere."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.backends.api.live import Backend
from tests.backends.react.test_react_page import PASSWORD, react_tab, served_react

pytestmark = pytest.mark.browser

CHATS = 105  # more than the list shows at first


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Backend]:
    with served_react(tmp_path_factory.mktemp("react-list")) as running:
        api = running.client().login("ada", PASSWORD)
        for n in range(CHATS):  # the first made is the oldest
            api.create_session(title=f"Chat number {n:03d}")
        yield running


@pytest.fixture
def page(backend: Backend, chromium: Browser) -> Iterator[Page]:
    with react_tab(backend, chromium, "/react/") as tab:
        yield tab


def test_older_chats_are_reached_with_show_more_and_stay_listed(
    page: Page, backend: Backend
) -> None:
    page.get_by_label("User name").fill("ada")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    chats = page.get_by_role("navigation", name="Your chats")
    expect(chats.get_by_role("listitem")).to_have_count(100)
    expect(chats).to_contain_text("Your 100 most recent chats: show more, or search,")
    oldest = chats.get_by_role("button", name="Chat number 000")
    expect(oldest).to_have_count(0)
    chats.get_by_role("button", name="Show more chats").click()
    expect(chats.get_by_role("listitem")).to_have_count(CHATS)
    expect(chats).not_to_contain_text("most recent chats")  # every chat is listed
    expect(chats.get_by_role("button", name="Show more chats")).to_have_count(0)
    oldest.click()
    expect(page.get_by_role("heading", name="Chat number 000")).to_be_visible()
    # a chat made elsewhere: listed first, and the older ones stay listed
    api = backend.client().login("ada", PASSWORD)
    api.create_session(title="Made in another tab")
    expect(chats.get_by_role("listitem").first).to_have_text("Made in another tab")
    expect(chats.get_by_role("listitem")).to_have_count(CHATS + 1)
    expect(oldest).to_have_attribute("aria-current", "page")
    # a search lists its own most recent page, saying when nothing matches
    search = page.get_by_label("Search chats")
    search.fill("number 00")
    expect(chats.get_by_role("listitem")).to_have_count(10)
    search.fill("no chat is called this")
    expect(chats).to_contain_text("No chats match “no chat is called this”.")
