"""The Streamlit front end while AutoChat waits between two of its turns (`gui-agent
streamlit` against a real API server, in a real Chromium): the chat says a turn is coming
(as the Gradio and React pages do), not that the agent is working, since nothing runs; Stop
ends AutoChat."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from playwright.sync_api import Page, expect

from gui_agent.wording import AUTOCHAT_BETWEEN_TURNS
from tests.backends.api.live import Backend
from tests.backends.streamlit.kit import clicked, losing_a_click, opened, sent_and_lost
from tests.backends.streamlit.test_streamlit_page import (
    PASSWORD,
    backend,
    front,
    new_chat,
    page,
    send,
    settled,
    signed_in,
)

pytestmark = pytest.mark.browser

__all__ = ["backend", "front", "page"]  # (the fixtures, shared with the page's tests)

SAVED_WITHIN_S = 20.0


def newest_limits(backend: Backend) -> dict[str, object]:
    """The AutoChat settings the server has for the newest chat without a title."""
    api = backend.client().login("ada", PASSWORD)
    untitled = [s for s in api.get("/api/sessions").json()["sessions"] if not s["title"]]
    return dict(untitled[0]["autochat"]) if untitled else {}


def limits_saved(backend: Backend, max_turns: int, delay_s: float) -> None:
    """Wait until the server has the limits just saved for the newest chat (right after the
    click, the run that saves them may not have begun)."""
    deadline = time.monotonic() + SAVED_WITHIN_S
    while True:
        limits = newest_limits(backend)
        if limits.get("max_turns") == max_turns and limits.get("delay_s") == delay_s:
            return
        assert time.monotonic() < deadline, f"the limits were not saved: {limits}"
        time.sleep(0.1)


def limits_typed_in_a_new_chat(page: Page, max_turns: int, delay_s: float) -> None:
    """Sign in, start a chat, type the AutoChat limits (not saved yet)."""
    signed_in(page)
    new_chat(page)
    opened(page, "AutoChat")
    page.get_by_label("Max automatic turns").fill(str(max_turns))
    page.get_by_label("Delay between turns (s)").fill(str(delay_s))
    settled(page)


def save_limits(page: Page) -> Callable[[], None]:
    """A click on Save limits."""
    return page.get_by_role("button", name="Save limits").click


def test_the_chat_says_autochat_waits_between_its_turns_not_that_it_works(
    page: Page, backend: Backend
) -> None:
    limits_typed_in_a_new_chat(page, 5, 30.0)
    clicked(page, save_limits(page))
    limits_saved(backend, 5, 30.0)
    settled(page)
    clicked(page, page.get_by_text("AutoChat: keep working on its own").click)
    send(page, "keep going between turns")
    expect(page.get_by_text("Automatic turn 1 of", exact=False)).to_be_visible()
    waiting = page.get_by_text(AUTOCHAT_BETWEEN_TURNS)
    expect(waiting).to_be_visible()
    expect(page.get_by_text("Working…", exact=False)).to_have_count(0)  # nothing runs
    stop = page.get_by_role("button", name="Stop")
    expect(stop).to_be_enabled()  # AutoChat is there to be stopped
    stop.click()
    expect(
        page.get_by_text("AutoChat stopped after 0 automatic turns", exact=False)
    ).to_be_visible()
    expect(waiting).to_have_count(0)


def test_the_turn_after_the_wait_is_followed_and_the_wait_is_said_no_more(
    page: Page, backend: Backend
) -> None:
    limits_typed_in_a_new_chat(page, 1, 3.0)
    clicked(page, save_limits(page))
    limits_saved(backend, 1, 3.0)
    settled(page)
    clicked(page, page.get_by_text("AutoChat: keep working on its own").click)
    send(page, "one more turn after a wait")
    waiting = page.get_by_text(AUTOCHAT_BETWEEN_TURNS)
    expect(waiting).to_be_visible()
    expect(
        page.get_by_text("AutoChat stopped after 1 automatic turn: it reached its limit")
    ).to_be_visible()
    expect(waiting).to_have_count(0)
    replies = page.get_by_test_id("stChatMessage").filter(has_text="Hello from the scripted model.")
    expect(replies).to_have_count(2)  # the person's turn's, and the automatic turn's


def test_limits_saved_and_the_switch_clicked_at_once_both_count(
    page: Page, backend: Backend
) -> None:
    """The switch clicked right after Save limits, before the page ran again: both are
    saved (the switch's run took the place of the one that saved the limits, and the
    limits the page showed were never saved)."""
    limits_typed_in_a_new_chat(page, 2, 7.0)
    clicked(page, save_limits(page))
    clicked(page, page.get_by_text("AutoChat: keep working on its own").click)  # at once
    limits_saved(backend, 2, 7.0)
    settled(page)
    assert newest_limits(backend)["enabled"] is True


def test_limits_whose_save_click_was_lost_are_saved_by_the_run_that_took_its_place(
    page: Page, backend: Backend
) -> None:
    """Save's click lost (the switch, clicked right after, came as the run it asked for was
    starting; Streamlit ran the switch's run alone, with the boxes' values but not the
    click): the switch's run saves the limits the boxes hold."""
    lost = losing_a_click(page, "limits-")
    limits_typed_in_a_new_chat(page, 2, 7.0)
    sent_and_lost(page, lost, save_limits(page))
    settled(page)
    clicked(page, page.get_by_text("AutoChat: keep working on its own").click)
    limits_saved(backend, 2, 7.0)
    assert newest_limits(backend)["enabled"] is True
    expect(page.get_by_text("AutoChat is on: up to 2 automatic turns.")).to_be_visible()
    # (until the run ends, Streamlit can still show the box the run before drew, greyed)
    settled(page)
    expect(page.get_by_label("Max automatic turns")).to_have_value("2")


def test_limits_refused_are_said_once_not_tried_again_on_every_run(
    page: Page, backend: Backend
) -> None:
    """A save the server refuses is said, and the limits the boxes still hold are not sent
    again by each run that follows (only Save, clicked again, tries them again)."""
    signed_in(page)
    new_chat(page)
    opened(page, "AutoChat")
    budget = page.get_by_label("Token budget (0 = none)")
    budget.fill(str(2**31))  # past any budget
    clicked(page, page.get_by_role("button", name="Save limits").click)
    refusal = page.get_by_text("token_budget", exact=False)
    expect(refusal).to_be_visible()
    settled(page)
    expect(budget).to_have_value(str(2**31))  # the limits refused, in their boxes
    switch = page.get_by_text("AutoChat: keep working on its own")
    expect(switch).to_be_visible()  # the section still open, the refusal said above it
    clicked(page, switch.click)  # a run more
    expect(page.get_by_text("AutoChat is on: up to 5 automatic turns.")).to_be_visible()
    settled(page)
    expect(refusal).to_have_count(0)  # not tried again: nothing said again
    limits = newest_limits(backend)
    assert limits["enabled"] is True and limits["token_budget"] is None
    expect(budget).to_have_value(str(2**31))  # kept
    clicked(page, page.get_by_role("button", name="Save limits").click)  # tried again when asked
    expect(refusal).to_be_visible()
