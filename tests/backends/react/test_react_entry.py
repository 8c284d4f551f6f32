"""Who wrote each message, as the React front end's chat names it: an agent role by its own
name (a message of the OTHER role says "Other", not another role's name)."""

from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import Page, expect

from tests.backends.api.live import Backend
from tests.backends.react.test_react_page import (  # (the module's server and tab)
    PASSWORD,
    backend,
    chat_titled,
    new_chat,
    page,
    send,
    signed_in,
)

pytestmark = pytest.mark.browser
__all__ = ["backend", "page"]  # fixtures, used by name


def test_a_message_of_the_other_role_is_named_other(page: Page, backend: Backend) -> None:
    signed_in(page)
    new_chat(page)
    asked = f"who answers {uuid.uuid4().hex[:8]}"  # (a rerun makes another)
    send(page, asked)
    conversation = page.get_by_role("list", name="Conversation")
    expect(conversation).to_contain_text("Hello from the scripted model.")
    expect(page.get_by_role("status", name="State")).to_have_text("STOP")
    api = backend.client().login("ada", PASSWORD)
    document = api.get(f"/api/sessions/{chat_titled(backend, asked)}/export").json()
    # the same chat, its reply written by the OTHER role (as a chat of a custom role is)
    title = f"Answered by another role {uuid.uuid4().hex[:8]}"
    document["session"]["title"] = title
    for message in document["messages"]:
        if message["role"] == "assistant":
            message["agent"] = "OTHER"
    for event in document["events"]:
        if event.get("agent"):
            event["agent"] = "OTHER"
        if isinstance(event.get("message"), dict) and event["message"].get("agent"):
            event["message"]["agent"] = "OTHER"
    imported = api.post("/api/sessions/import", json=document)
    assert imported.status_code == 201, imported.text
    chats = page.get_by_role("navigation", name="Your chats")
    chats.get_by_role("button", name=title).click()
    expect(page.get_by_role("heading", name=title)).to_be_visible()
    reply = conversation.locator(".entry.assistant")
    expect(reply).to_contain_text("Hello from the scripted model.")
    expect(reply.locator(".speaker")).to_have_text("Other")
