"""In a real browser, with the keyboard only: the temperature moved with the arrow keys is
saved as it moves (a slider moved so ends in no "release"), reaches the model, and is there
again after a reload."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, expect

from connectors.scripted import ScriptedModel
from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import (
    eventually,
    open_tab,
    send,
    served,
    session_starting,
    user_messages,
    wait_idle,
)
from tests.backends.gradio.test_page_settings_hunt8 import build, open_settings, settings_of

pytestmark = pytest.mark.browser


@pytest.fixture
def server() -> Iterator[LiveServer]:
    with served(build) as running:
        yield running


def test_a_temperature_moved_with_the_arrow_keys_is_saved_and_survives_a_reload(
    chromium: Browser, server: LiveServer
) -> None:
    tab = open_tab(chromium, server, viewport={"width": 1280, "height": 900})
    send(tab, "a chat for the keyboard")
    wait_idle(tab)
    interpreter = session_starting(server, "a chat for the keyboard")
    open_settings(tab)  # (keys pressed as the slider appears could be undone)
    slider = tab.locator("#temperature input[type=range]")
    slider.focus()
    for _ in range(4):
        slider.press("ArrowLeft")
    expect(tab.locator("#temperature input[type=number]")).to_have_value("0.8")
    slider.press("Tab")  # on to the next control: nothing else is done
    # Saved as it moved, with no release. (The last step's save waits in the browser until
    # the one before it is back: a reload within that round trip would lose it.)
    eventually(
        tab,
        lambda: settings_of(server, interpreter).temperature == 0.8,
        "the last arrow key's temperature to be saved",
    )

    tab.reload(wait_until="load")
    expect(user_messages(tab)).to_have_count(1)
    tab.locator(".ga-side").get_by_text("Settings", exact=True).click()
    expect(tab.locator("#temperature input[type=number]")).to_have_value("0.8")
    assert settings_of(server, interpreter).temperature == 0.8
    send(tab, "warm enough")
    expect(user_messages(tab)).to_have_count(2)
    wait_idle(tab)
    model: ScriptedModel = server.state.model
    asked = model.requests[-1].settings
    assert asked is not None and asked.temperature == 0.8
    tab.context.close()
