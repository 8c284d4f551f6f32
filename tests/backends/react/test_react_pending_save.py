"""A change the person made shows while it is being saved, whatever the chat's events say
meanwhile.

An event about the record carries all of AutoChat's fields as they were when it was said:
one from a save made a moment before (the limits, then the switch at once, as in one CI run)
or from another tab, arriving while the switch's own save is on its way, flipped the switch
back on the page until that save's answer came.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Route, expect

from tests.backends.react.test_react_page import PASSWORD, react_tab, served_react, signed_in


@pytest.mark.browser
def test_the_autochat_switch_stays_as_clicked_while_its_save_is_on_its_way(
    tmp_path: Path, chromium: Browser
) -> None:
    with served_react(tmp_path) as backend, react_tab(backend, chromium) as page:
        signed_in(page)
        api = backend.client().login("ada", PASSWORD)
        title = f"Switched {uuid.uuid4().hex[:8]}"
        session_id = api.create_session(title=title)
        page.get_by_role("navigation", name="Your chats").get_by_role("button", name=title).click()
        page.get_by_text("AutoChat", exact=True).click()
        held: list[Route] = []

        def hold_saves(route: Route) -> None:
            if route.request.method == "PATCH":
                held.append(route)  # answered below, after the other tab's save
            else:
                route.continue_()

        page.route("**/api/sessions/*", hold_saves)
        switch = page.get_by_label("AutoChat: keep working on its own")
        switch.check()
        for _ in range(100):  # the switch's save is on its way, held
            if held:
                break
            page.wait_for_timeout(20)
        assert len(held) == 1
        # Another tab saves a limit: its event says AutoChat is off (the switch's save has
        # not reached the server), and the delay it set.
        answer = api.request(
            "PATCH", f"/api/sessions/{session_id}", json={"autochat": {"delay_s": 3}}
        )
        assert answer.status_code == 200, answer.text
        delay = page.get_by_label("Delay between turns (s)")
        expect(delay).to_have_value("3")  # (the event came)
        expect(switch).to_be_checked()
        expect(page.get_by_text("AutoChat is on: up to 5 automatic turns.")).to_be_visible()
        held[0].continue_()
        expect(page.get_by_text("AutoChat is on: up to 5 automatic turns.")).to_be_visible()
        expect(switch).to_be_checked()
        expect(delay).to_have_value("3")  # (the answer changes only what this save changed)
        autochat = api.session(session_id)["session"]["autochat"]
        assert autochat["enabled"] is True and autochat["delay_s"] == 3
