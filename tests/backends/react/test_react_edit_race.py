"""An edit begun in the React page, then overtaken by a message sent from elsewhere: the
server refuses it, the page says why and keeps the edited text, and nothing is lost (the edit
replaced the newer message and dropped its reply)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.backends.api.live import Backend
from tests.backends.react.test_react_page import (  # (the module's server and tab)
    PASSWORD,
    backend,
    page,
    send,
    signed_in,
)

pytestmark = pytest.mark.browser
__all__ = ["backend", "page"]  # fixtures, used by name


def test_an_edit_overtaken_by_a_message_from_elsewhere_is_refused_and_loses_nothing(
    page: Page, backend: Backend
) -> None:
    signed_in(page)
    api = backend.client().login("ada", PASSWORD)
    session_id = api.create_session(title="Edited elsewhere")
    chats = page.get_by_role("navigation", name="Your chats")
    chats.get_by_role("button", name="Edited elsewhere").click()
    expect(page.get_by_role("heading", name="Edited elsewhere")).to_be_visible()
    conversation = page.get_by_role("list", name="Conversation")
    send(page, "mine, to be edited")
    expect(conversation).to_contain_text("Hello from the scripted model.")
    expect(page.get_by_role("status", name="State")).to_have_attribute("data-state", "STOP")
    page.get_by_role("button", name="Edit last message").click()
    box = page.get_by_label("Message")
    expect(box).to_have_value("mine, to be edited")
    api.send(session_id, "sent since, from another tab")
    expect(conversation).to_contain_text("sent since, from another tab")
    expect(page.get_by_role("status", name="State")).to_have_attribute("data-state", "STOP")
    box.fill("mine, edited")
    page.get_by_role("button", name="Send edited").click()
    expect(page.get_by_role("alert")).to_contain_text("another was sent since")
    assert box.input_value() == "mine, edited"  # nothing typed is lost
    contents = [m.content for m in api.messages(session_id)]
    assert contents[0] == "mine, to be edited"
    assert "sent since, from another tab" in contents
