"""In a real browser: a message sent right after a role or a model was picked runs as
picked, even when the pick reaches the server after the message. The browser sends each
event on a connection of its own, so their order on the way is not the order they were
made in: the turn ran as the role the chat had before while the picker showed the new one
(the React front end had the same race: test_react_save_order.py)."""

from __future__ import annotations

import functools
import uuid
from collections.abc import Collection, Iterator

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from connectors.scripted import ScriptedModel
from schema import AgentName
from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import (
    bot_messages,
    eventually,
    open_tab,
    pick,
    send,
    served,
    session_of,
    wait_idle,
)
from tests.backends.gradio.test_page_model_picker import built_with

pytestmark = pytest.mark.browser

JOIN = "**/gradio_api/queue/join*"


class HeldPicks:
    """Holds the tab's requests to pick one of `names` (a picker's event: its inputs are the
    chat's id and the name picked) until let go: the server gets them only then."""

    def __init__(self, tab: Page, names: Collection[str]) -> None:
        self.tab = tab
        self.names = names
        self.held: list[Route] = []
        tab.route(JOIN, self._route)

    def _route(self, route: Route) -> None:
        data = (route.request.post_data_json or {}).get("data")
        if isinstance(data, list) and len(data) == 2 and data[1] in self.names:
            self.held.append(route)
        else:
            route.continue_()

    def let_go(self) -> None:
        """Send the held picks on, and wait until the server has answered each."""
        for route in self.held:
            route.continue_()
        self.tab.unroute(JOIN, self._route)
        for route in self.held:
            answer = route.request.response()
            assert answer is not None and answer.ok


def test_a_message_sent_while_the_role_pick_is_on_its_way_runs_as_the_role_picked(
    tab: Page, server: LiveServer
) -> None:
    send(tab, f"a chat whose role changes {uuid.uuid4().hex[:8]}")
    wait_idle(tab)
    interpreter = session_of(server, tab)
    picks = HeldPicks(tab, AgentName.__members__)
    pick(tab, "role-picker", "Crew")
    eventually(tab, lambda: bool(picks.held), "the pick on its way")
    send(tab, "hello crew")
    expect(bot_messages(tab).last).to_contain_text("You said: You are the reviewer.")
    wait_idle(tab)
    assert interpreter.session.agent is AgentName.CREW
    # (the switch is shown before the crew's replies, as for a pick that came first)
    expect(tab.locator("#chatbot .ga-switch")).to_have_text(
        ["Switched to Crew from Executor (picked by the person)"]
    )
    expect(tab.locator("#chatbot .ga-agent")).to_have_text(
        ["Executor", "Crew", "Crew · doer", "Crew · reviewer"]
    )
    picks.let_go()  # the pick, come at last, finds the chat so
    assert interpreter.session.agent is AgentName.CREW
    expect(tab.locator("#role-picker input")).to_have_value("Crew")


FIRST, SECOND = "first-model", "second-model"


@pytest.fixture(scope="module")
def two_models() -> Iterator[LiveServer]:
    models = (ScriptedModel(name=name, default=f"{name} answers") for name in (FIRST, SECOND))
    with served(functools.partial(built_with, *models)) as running:
        yield running


def test_a_message_sent_while_the_model_pick_is_on_its_way_goes_to_the_model_picked(
    chromium: Browser, two_models: LiveServer
) -> None:
    tab = open_tab(chromium, two_models)
    try:
        send(tab, f"a chat whose model changes {uuid.uuid4().hex[:8]}")
        expect(bot_messages(tab).last).to_contain_text(f"{FIRST} answers")
        wait_idle(tab)
        interpreter = session_of(two_models, tab)
        tab.locator(".ga-side").get_by_text("Settings", exact=True).click()
        picks = HeldPicks(tab, (FIRST, SECOND))
        pick(tab, "model-picker", SECOND)
        eventually(tab, lambda: bool(picks.held), "the pick on its way")
        send(tab, "which model now")
        expect(bot_messages(tab).last).to_contain_text(f"{SECOND} answers")
        wait_idle(tab)
        assert interpreter.session.settings.model == SECOND
        picks.let_go()
        assert interpreter.session.settings.model == SECOND
        expect(tab.locator("#model-picker input")).to_have_value(SECOND)
        expect(tab.locator("#model-note code")).to_have_text(SECOND)
    finally:
        tab.context.close()
