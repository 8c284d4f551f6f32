"""A message sent right after a change waits for it: it runs with what the person picked.

The role picked is saved by one request, the message sent by another; the browser sends
them on connections of their own, so the message could reach the server first and run as
the role the chat had before (a crew's reply headed "Executor", in one CI run).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser, Request, Route, expect

from tests.backends.react.test_react_page import (
    new_chat,
    react_tab,
    send,
    served_react,
    signed_in,
)


@pytest.mark.browser
def test_a_message_sent_while_the_role_is_being_saved_runs_as_that_role(
    tmp_path: Path, chromium: Browser
) -> None:
    with served_react(tmp_path) as backend, react_tab(backend, chromium) as page:
        signed_in(page)
        new_chat(page)
        held: list[Route] = []
        posted: list[Request] = []

        def hold_saves(route: Route) -> None:
            if route.request.method == "PATCH":
                held.append(route)  # answered below, after the message was sent
            else:
                route.continue_()

        page.route("**/api/sessions/*", hold_saves)

        def note_post(request: Request) -> None:
            if request.method == "POST" and request.url.endswith("/messages"):
                posted.append(request)

        page.on("request", note_post)
        page.get_by_label("Agent role").select_option("CREW")
        for _ in range(100):  # the save is on its way, held
            if held:
                break
            page.wait_for_timeout(20)
        assert len(held) == 1
        send(page, "hello crew")
        page.wait_for_timeout(300)  # a message that does not wait would be on its way now
        assert posted == []
        held[0].continue_()
        speakers = page.get_by_role("list", name="Conversation").locator(".entry .speaker")
        expect(speakers).to_have_text(
            ["Crew · doer", "Crew, over to the reviewer", "Crew · reviewer"]
        )
        assert len(posted) == 1
