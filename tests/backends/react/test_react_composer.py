"""The React front end's chat: an edit ends when Clear empties the chat (the message being
edited is gone), two Enters in one step of the page's script send the message once, and
each message names the role that wrote it by its own name (OTHER says "Other")."""

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

REPLY = "Hello from the scripted model."

TWO_ENTERS = """() => {
  const box = document.querySelector('textarea[aria-label="Message"]');
  const enter = { key: "Enter", bubbles: true, cancelable: true };
  box.dispatchEvent(new KeyboardEvent("keydown", enter));
  box.dispatchEvent(new KeyboardEvent("keydown", enter));
}"""


def test_clear_ends_the_edit_of_a_message_it_removed(page: Page, backend: Backend) -> None:
    signed_in(page)
    api = backend.client().login("ada", PASSWORD)
    title = f"Edited, then cleared {uuid.uuid4().hex[:8]}"  # (a rerun makes another)
    session_id = api.create_session(title=title)
    page.get_by_role("navigation", name="Your chats").get_by_role("button", name=title).click()
    expect(page.get_by_role("heading", name=title)).to_be_visible()
    send(page, "to be edited, then cleared")
    conversation = page.get_by_role("list", name="Conversation")
    expect(conversation).to_contain_text(REPLY)
    expect(page.get_by_role("status", name="State")).to_have_attribute("data-state", "STOP")
    page.get_by_role("button", name="Edit last message").click()
    expect(page.get_by_role("button", name="Send edited")).to_be_visible()
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Clear chat").click()
    expect(conversation.locator(".entry")).to_have_count(0)
    # the edit is over: what is sent next is a new message, not an edit of one that is gone
    expect(page.get_by_text("Editing your last message", exact=False)).to_have_count(0)
    expect(page.get_by_role("button", name="Send edited")).to_have_count(0)
    send(page, "a new start")
    expect(conversation).to_contain_text(REPLY)
    expect(page.get_by_role("alert")).to_have_count(0)
    assert [m.content for m in api.messages(session_id)] == ["a new start", REPLY]


def test_two_enters_in_one_step_send_the_message_once(page: Page, backend: Backend) -> None:
    signed_in(page)
    new_chat(page)
    once = f"sent once {uuid.uuid4().hex[:8]}"  # (a rerun makes another)
    page.get_by_label("Message").fill(once)
    page.evaluate(TWO_ENTERS)
    conversation = page.get_by_role("list", name="Conversation")
    expect(conversation).to_contain_text(REPLY)
    expect(page.get_by_role("status", name="State")).to_have_attribute("data-state", "STOP")
    send(page, "and then this")  # (sent after any second copy: it would be in by its reply)
    expect(conversation.locator(".entry.user")).to_have_count(2)
    expect(conversation.locator(".entry")).to_have_count(4)
    expect(page.get_by_role("status", name="State")).to_have_attribute("data-state", "STOP")
    api = backend.client().login("ada", PASSWORD)
    contents = [m.content for m in api.messages(chat_titled(backend, once))]
    assert contents == [once, REPLY, "and then this", REPLY]


def test_a_message_of_the_other_role_is_named_other(page: Page, backend: Backend) -> None:
    signed_in(page)
    new_chat(page)
    asked = f"who answers {uuid.uuid4().hex[:8]}"  # (a rerun makes another)
    send(page, asked)
    conversation = page.get_by_role("list", name="Conversation")
    expect(conversation).to_contain_text("Hello from the scripted model.")
    expect(page.get_by_role("status", name="State")).to_have_attribute("data-state", "STOP")
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
