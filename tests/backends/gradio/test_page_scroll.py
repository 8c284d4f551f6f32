"""In a real browser: a message sent while the chat is scrolled up (to reread an earlier
reply) brings the chat to its end, where the message and its reply show; scrolling up
while a reply comes in leaves the person where they scrolled to."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import (
    WAIT_MS,
    bot_messages,
    open_tab,
    send,
    user_messages,
    wait_idle,
)

pytestmark = pytest.mark.browser

LOG = "#chatbot [role=log]"


AT_END = f"""() => {{
    const log = document.querySelector("{LOG}");
    return log.scrollTop + log.clientHeight >= log.scrollHeight - 4;
}}"""


def at_end(tab: Page) -> bool:
    return bool(tab.evaluate(AT_END))


def shows_its_end(tab: Page) -> None:
    tab.wait_for_function(AT_END)  # (fails when the chat does not get there)


def scrolled_up(tab: Page) -> None:
    """Scroll the chat up with the mouse wheel, as a person rereading does."""
    tab.locator(LOG).hover()
    tab.mouse.wheel(0, -3000)
    expect(bot_messages(tab).first).to_be_in_viewport()


def test_a_message_sent_from_higher_up_shows_with_its_reply(
    chromium: Browser, server: LiveServer
) -> None:
    tab = open_tab(chromium, server, viewport={"width": 1280, "height": 900})
    send(tab, "stream 250")  # a reply taller than the chat, followed as it comes
    expect(bot_messages(tab).last).to_contain_text("word249", timeout=WAIT_MS)
    wait_idle(tab)
    shows_its_end(tab)
    scrolled_up(tab)
    send(tab, "and what now?")
    expect(user_messages(tab)).to_have_count(2)
    expect(bot_messages(tab).last).to_contain_text("You said: and what now?")
    wait_idle(tab)
    expect(user_messages(tab).last).to_be_in_viewport()
    expect(bot_messages(tab).last).to_be_in_viewport()
    shows_its_end(tab)

    # scrolled up while a reply comes in: the chat stays where the person put it
    send(tab, "stream 250")
    expect(bot_messages(tab).last).to_contain_text("word30 ")
    scrolled_up(tab)
    expect(bot_messages(tab).last).to_contain_text("word249", timeout=WAIT_MS)
    wait_idle(tab)
    expect(bot_messages(tab).first).to_be_in_viewport()
    assert not at_end(tab)

    tab.context.close()
