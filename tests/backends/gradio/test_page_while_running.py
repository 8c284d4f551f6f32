"""The chat page while a turn or AutoChat runs, in a real browser: a message sent meanwhile
is queued and shown, writing or Stop ends AutoChat (also between its turns), switching chats
always shows the picked one, a reload reopens the chat, and a second tab sees it all."""

from __future__ import annotations

import uuid

import pytest
from playwright.sync_api import Browser, Page, expect

from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import (
    badge,
    bot_messages,
    chat,
    let_go,
    open_tab,
    record_sequence,
    recorded_sequence,
    send,
    session_of,
    session_starting,
    stop_session,
    toast,
    user_messages,
    wait_idle,
)

pytestmark = pytest.mark.browser

QUEUED = "Queued: the agent reads it when the current"


def start_autochat(page: Page, *, max_turns: int, delay_s: int, goal: str) -> None:
    page.locator("#autochat-max-turns input").fill(str(max_turns))
    page.locator("#autochat-delay input").fill(str(delay_s))
    page.locator("#autochat-delay input").press("Tab")
    page.locator("#autochat-toggle input").check()
    send(page, goal)


def test_a_message_sent_while_a_reply_streams_is_shown_queued_then_answered(
    tab: Page, server: LiveServer
) -> None:
    key = uuid.uuid4().hex[:8]
    send(tab, f"hold {key}")  # streams until let go: still streaming however slow the checks
    expect(bot_messages(tab).last).to_contain_text("word3")
    tab.locator("#chat-input textarea").fill("and then this")
    tab.locator("#send-btn").click()
    expect(toast(tab, QUEUED)).to_be_visible()
    expect(user_messages(tab).last).to_contain_text("and then this")
    expect(user_messages(tab).last).to_contain_text("queued")
    expect(tab.locator("#chat-input textarea")).to_have_value("")
    expect(badge(tab)).to_have_text("Working…")
    shown = len(bot_messages(tab).last.inner_text().split())
    expect(bot_messages(tab).last).to_contain_text(f"word{shown + 3}")  # still streaming
    let_go(server, key)
    expect(bot_messages(tab).last).to_contain_text("You said: and then this")
    wait_idle(tab)
    expect(bot_messages(tab).filter(has_text="(let go)")).to_have_count(1)  # the first reply
    expect(user_messages(tab)).to_have_count(2)
    expect(chat(tab)).not_to_contain_text("queued")


def test_stop_and_esc_end_autochat_while_it_waits_between_turns(
    tab: Page, server: LiveServer
) -> None:
    record_sequence(tab, "#autochat-status")
    start_autochat(tab, max_turns=5, delay_s=30, goal="autochat: count")
    status = tab.locator("#autochat-status")
    expect(status).to_have_text("AutoChat: automatic turn 1 of 5 starts shortly.")
    expect(badge(tab)).to_have_text("AutoChat: next turn soon")  # (not "Your turn")
    expect(tab.locator("#stop-btn")).to_be_enabled()  # AutoChat is there to be stopped
    tab.keyboard.press("Escape")
    expect(status).to_have_text(
        "AutoChat stopped after 0 automatic turns: stopped by the user. "
        "It is still switched on: your next message starts it again."
    )
    expect(tab.locator("#stop-btn")).to_be_disabled()
    expect(badge(tab)).to_have_text("Your turn")  # AutoChat ended: nothing more is coming
    interpreter = session_of(server, tab)
    assert not interpreter.busy and not interpreter.autochat_active
    assert not any("running" in text for text in recorded_sequence(tab))  # no turn ran
    expect(chat(tab)).not_to_contain_text("AutoChat turn 1:")


def test_writing_ends_autochat_and_the_message_is_answered_at_once(
    tab: Page, server: LiveServer
) -> None:
    start_autochat(tab, max_turns=3, delay_s=30, goal="autochat: count")
    status = tab.locator("#autochat-status")
    expect(status).to_have_text("AutoChat: automatic turn 1 of 3 starts shortly.")
    send(tab, "change of plan")  # during the 30 s wait: no step runs, nothing is queued
    expect(toast(tab, "Sent: the agent answers it now, in place of AutoChat")).to_be_visible()
    # the turn it had announced never ran: the chat says so, as the status line does
    expect(chat(tab)).to_contain_text(
        "AutoChat stopped after 0 automatic turns: you sent a message"
    )
    expect(bot_messages(tab).last).to_contain_text("You said: change of plan")
    expect(chat(tab)).not_to_contain_text("AutoChat turn 1:")
    # AutoChat is still switched on, so it takes the new message as its goal
    expect(status).to_have_text("AutoChat: automatic turn 1 of 3 starts shortly.")
    tab.locator("#stop-btn").click()
    expect(status).to_have_text(
        "AutoChat stopped after 0 automatic turns: stopped by the user. "
        "It is still switched on: your next message starts it again."
    )
    assert not session_of(server, tab).busy


def test_retry_while_a_reply_streams_is_refused_and_the_reply_keeps_streaming(
    tab: Page, server: LiveServer
) -> None:
    key = uuid.uuid4().hex[:8]
    send(tab, f"hold {key}")  # streams until let go: still streaming when Retry is pressed
    expect(bot_messages(tab).last).to_contain_text("word3")
    tab.locator("#retry-btn").click()
    expect(toast(tab, "stop the running turn first")).to_be_visible()
    shown = len(bot_messages(tab).last.inner_text().split())
    expect(bot_messages(tab).last).to_contain_text(f"word{shown + 3}")  # shown live
    let_go(server, key)
    expect(bot_messages(tab).last).to_contain_text("(let go)")
    wait_idle(tab)
    expect(user_messages(tab)).to_have_count(1)
    expect(bot_messages(tab)).to_have_count(1)


@pytest.mark.parametrize("switch", ["new chat", "another chat"])
def test_switching_chats_during_a_reply_always_shows_the_picked_chat(
    tab: Page, server: LiveServer, switch: str
) -> None:
    run = uuid.uuid4().hex[:8]  # (every chat's text is unique: a rerun's too)
    other = f"the other chat ({switch}, {run})"
    send(tab, other)
    wait_idle(tab)
    for attempt in range(4):  # it was a race: try it a few times
        first = f"slow race, {switch}, {run}, {attempt}"
        if user_messages(tab).count():  # (New chat empties the input box: wait for it)
            tab.locator("#new-session-btn").click()
            expect(user_messages(tab)).to_have_count(0)
        # The list shows the other chat alone: a refresh of the list that lands as it is
        # clicked (a chat's turn ended) cannot move another chat under the pointer.
        tab.locator("#session-search textarea").fill(other)
        expect(tab.locator("#session-list label")).to_have_count(1)
        send(tab, first)
        expect(bot_messages(tab).last).to_contain_text("word5")
        record_sequence(tab, "#state-badge")
        if switch == "new chat":
            tab.locator("#new-session-btn").click()
            expected = "Ready"
            expect(user_messages(tab)).to_have_count(0)
        else:
            tab.locator("#session-list").get_by_text(other).first.click()
            expected = "Your turn"
            expect(bot_messages(tab).last).to_contain_text(f"You said: {other}")
        expect(badge(tab)).to_have_text(expected)
        tab.wait_for_timeout(300)  # a late update of the old chat would land in here
        seen = recorded_sequence(tab)
        after = seen[seen.index(expected) :]
        assert "Working…" not in after, seen
        expect(badge(tab)).to_have_text(expected)
        expect(chat(tab)).not_to_contain_text("word5")
        expect(tab.locator("#stop-btn")).to_be_disabled()
        shown = "" if switch == "new chat" else session_starting(server, other).id
        expect(tab.locator("#session-id textarea")).to_have_value(shown)  # what Send uses
        running = session_starting(server, first)
        # switching the view does not stop the chat left
        assert running.busy, (attempt, running.state, running.session.history[-1:])
        stop_session(server, running)


def test_a_reload_reopens_the_chat_and_follows_a_running_reply(tab: Page) -> None:
    send(tab, "remember me across reloads")
    wait_idle(tab)
    tab.reload(wait_until="load")
    expect(bot_messages(tab).last).to_contain_text("You said: remember me across reloads")
    expect(badge(tab)).to_have_text("Your turn")
    expect(tab.locator("#session-list input:checked")).to_have_count(1)
    send(tab, "slow")
    expect(bot_messages(tab).last).to_contain_text("word3")
    tab.reload(wait_until="load")
    expect(badge(tab)).to_have_text("Working…")
    shown = bot_messages(tab).last.inner_text().split()
    expect(bot_messages(tab).last).to_contain_text(f"word{len(shown) + 3}")  # still streaming
    tab.keyboard.press("Escape")
    wait_idle(tab)
    expect(bot_messages(tab).last).to_contain_text("[interrupted]")
    expect(user_messages(tab).first).to_contain_text("remember me across reloads")


def test_a_message_queued_from_a_second_tab_shows_in_both(
    tab: Page, chromium: Browser, server: LiveServer
) -> None:
    title = f"shared between tabs {uuid.uuid4().hex[:8]}"  # a rerun's chat is its own
    send(tab, title)
    wait_idle(tab)
    other = open_tab(chromium, server)
    try:
        other.locator("#session-search textarea").fill(title)
        other.locator("#session-list").get_by_text(title).first.click()
        expect(bot_messages(other).last).to_contain_text(f"You said: {title}")
        key = uuid.uuid4().hex[:8]
        send(tab, f"hold {key}")  # streams until let go: however slow the second tab's checks
        expect(bot_messages(tab).last).to_contain_text("word3")
        send(other, "from the second tab")
        expect(toast(other, QUEUED)).to_be_visible()
        expect(user_messages(other).last).to_contain_text("from the second tab")
        expect(badge(other)).to_have_text("Working…")  # it follows the turn from now on
        shown = len(bot_messages(other).last.inner_text().split())
        expect(bot_messages(other).last).to_contain_text(f"word{shown + 3}")  # live
        expect(user_messages(tab).last).to_contain_text("from the second tab")
        let_go(server, key)
        for page in (tab, other):
            expect(bot_messages(page).last).to_contain_text("You said: from the second tab")
            expect(bot_messages(page).filter(has_text="(let go)")).to_have_count(1)
            wait_idle(page)
            expect(chat(page)).not_to_contain_text("queued")
    finally:
        other.context.close()


def test_a_tab_left_on_a_chat_follows_what_another_tab_does_there(
    tab: Page, chromium: Browser, server: LiveServer
) -> None:
    title = f"watched from a second tab {uuid.uuid4().hex[:8]}"  # a rerun's chat is its own
    send(tab, title)
    wait_idle(tab)
    other = open_tab(chromium, server)
    try:
        other.locator("#session-search textarea").fill(title)
        other.locator("#session-list").get_by_text(title).first.click()
        expect(bot_messages(other).last).to_contain_text(f"You said: {title}")
        send(tab, "python: print('approved in the other tab')")
        # the idle tab shows the run it did not start, and can answer its approval
        expect(badge(other)).to_have_text("Waiting for your approval")
        expect(other.locator("#approval-panel")).to_be_visible()
        expect(other.locator("#stop-btn")).to_be_enabled()
        other.locator("#approve-once-btn").click()
        for page in (tab, other):
            expect(bot_messages(page).last).to_contain_text("Result: approved in the other")
            wait_idle(page)
            expect(page.locator("#approval-panel")).to_be_hidden()
        tab.locator("#clear-btn").click()
        tab.locator("#confirm-clear-btn").click()
        expect(user_messages(other)).to_have_count(0)  # cleared there: cleared here
        expect(badge(other)).to_have_text("Your turn")
    finally:
        other.context.close()
