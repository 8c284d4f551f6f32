"""The chat page in a real browser: what the sidebar shows of long titles, and whether the
page's own labels can be read in the light and the dark theme (see kit.py for the scripted
model and conftest.py for the fixtures)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from fastapi import FastAPI
from playwright.sync_api import Browser, Page, expect

from connectors.function import FunctionInfo
from schema import Message, ModelResponse, Role
from tests.backends.conftest import LiveServer, live_server
from tests.backends.gradio.kit import (
    WAIT_MS,
    Served,
    badge,
    build_playing,
    closing,
    open_manage,
    play,
    send,
    settle,
    wait_idle,
)

pytestmark = pytest.mark.browser

CUT_OFF = "cut off"


async def _play(messages: list[Message], info: FunctionInfo) -> Any:
    """kit.play, and "cut off": a reply the model stopped at its output limit."""
    last = messages[-1]
    if last.role is Role.USER and last.content == CUT_OFF:
        return ModelResponse(text="The first half of it", finish_reason="length")
    return await play(messages, info)


async def _build() -> tuple[FastAPI, Served]:
    return await build_playing(_play)


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(_build) as running:
        yield running
        running.call(closing(running))


_LABELS_INSIDE = """() => {
    const list = document.querySelector('#session-list');
    const labels = [...document.querySelectorAll('#session-list label')];
    if (!list || !labels.length) return false;
    const right = list.getBoundingClientRect().right;
    return labels.every((label) => label.getBoundingClientRect().right <= right + 1);
}"""


@pytest.mark.parametrize("width", [1280, 390])
def test_a_long_title_without_spaces_stays_inside_the_sidebar(tab: Page, width: int) -> None:
    """A chat whose first message is a pasted address gets a title with nowhere to break:
    it wraps in the sidebar, date and all, instead of running out of it (cut off)."""
    tab.set_viewport_size({"width": width, "height": 844})
    address = "https://example.com/" + "a" * 110
    send(tab, address)
    wait_idle(tab)
    sidebar = tab.locator("#session-sidebar")
    if "open" not in (sidebar.get_attribute("class") or "").split():
        tab.get_by_role("button", name="Toggle Sidebar").click()
    title = tab.locator("#session-list label").filter(has_text="https://example.com/aaaa")
    expect(title.first).to_be_visible()
    tab.wait_for_function(_LABELS_INSIDE)
    expect(title.first).to_contain_text("· 20")  # its date is there, inside the list


_CONTRAST = """(element) => {
    // WCAG contrast of the element's text on the first opaque background behind it.
    const rgb = (text) => text.match(/[\\d.]+/g).map(Number);
    const behind = (node) => {
        for (; node; node = node.parentElement) {
            const colour = rgb(getComputedStyle(node).backgroundColor);
            if (colour.length < 4 || colour[3] === 1) return colour.slice(0, 3);
        }
        return [255, 255, 255];
    };
    const background = behind(element);
    const alpha = Number(getComputedStyle(element).opacity);
    const text = rgb(getComputedStyle(element).color).slice(0, 3)
        .map((value, i) => value * alpha + background[i] * (1 - alpha));
    const light = (colour) => {
        const [r, g, b] = colour.map((v) => {
            v /= 255;
            return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const [a, b] = [light(text), light(background)];
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}"""

READABLE = 4.5
"""WCAG AA for normal text."""


def _contrast(locator: Any) -> float:
    expect(locator).to_be_visible()
    return float(locator.evaluate(_CONTRAST))


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_the_pages_own_labels_can_be_read_in_either_theme(
    chromium: Browser, server: LiveServer, theme: Literal["light", "dark"]
) -> None:
    """The state badge (its white text lost to the theme's dark text colour in the light
    theme), the agent's name over each reply, the AutoChat and hand-over labels and the
    "cut off" note were all below 4.5:1 in one theme or the other (1.8:1 at worst)."""
    context = chromium.new_context(viewport={"width": 1280, "height": 900}, color_scheme=theme)
    try:
        tab = context.new_page()
        tab.set_default_timeout(WAIT_MS)
        tab.goto(f"{server.url}?__theme={theme}", wait_until="load")
        expect(badge(tab)).to_have_text("Ready")
        assert _contrast(badge(tab).locator(".ga-badge")) >= READABLE, "INIT"
        send(tab, CUT_OFF)
        wait_idle(tab)
        assert _contrast(badge(tab).locator(".ga-badge")) >= READABLE, "STOP"
        reply = tab.locator('#chatbot [data-testid="bot"]').last
        assert _contrast(reply.locator(".ga-cut-off")) >= READABLE, "cut-off note"
        assert _contrast(reply.locator(".ga-agent")) >= READABLE, "agent's name"
        send(tab, "python: print(1)")
        expect(badge(tab)).to_have_text("Waiting for your approval")
        assert _contrast(badge(tab).locator(".ga-badge")) >= READABLE, "WAITING"
        tab.get_by_role("button", name="Deny").click()
        wait_idle(tab)
        tab.locator("#autochat-max-turns input").fill("1")
        tab.locator("#autochat-toggle input").check()  # goes on from the reply at once
        label = tab.locator('#chatbot [data-testid="user"] .ga-autochat').first
        assert _contrast(label) >= READABLE, "AutoChat turn label"
        expect(tab.locator("#autochat-status")).to_contain_text("AutoChat stopped")
    finally:
        context.close()


def test_enter_in_the_title_box_renames_the_chat(tab: Page) -> None:
    """Enter in Manage this chat › Title renames, as the button does (it did nothing)."""
    mark = uuid.uuid4().hex[:8]  # (a rerun after a failed attempt finds only its own chat)
    send(tab, f"a chat to rename {mark}")
    wait_idle(tab)
    open_manage(tab)
    title = tab.locator("#rename-input textarea, #rename-input input").first
    expect(title).to_have_value(f"a chat to rename {mark}")  # filled in after the turn
    settle(tab)  # (the box's value came from the server just now)
    title.fill(f"Renamed with Enter {mark}")
    title.press("Enter")
    chats = tab.locator("#session-list label")
    expect(chats.filter(has_text=f"Renamed with Enter {mark}")).to_have_count(1)
    expect(chats.filter(has_text=f"a chat to rename {mark}")).to_have_count(0)


@pytest.mark.parametrize("how", ["button", "enter"])
def test_a_rename_saves_the_title_the_box_shows_even_when_gradio_lags(tab: Page, how: str) -> None:
    """Gradio's copy of the Title box can lag a title typed just before Rename (a rename
    went out with the old title under load): Rename reads the box itself."""
    mark = uuid.uuid4().hex[:8]
    send(tab, f"a chat to retitle {mark}")
    wait_idle(tab)
    open_manage(tab)
    title = tab.locator("#rename-input textarea, #rename-input input").first
    expect(title).to_have_value(f"a chat to retitle {mark}")
    # The box shows the new title; Gradio is never told (no input event): its copy lags.
    title.evaluate("(box, text) => { box.value = text; }", f"Retitled {mark}")
    if how == "enter":
        title.press("Enter")
    else:
        tab.get_by_role("button", name="Rename chat").click()
    chats = tab.locator("#session-list label")
    expect(chats.filter(has_text=f"Retitled {mark}")).to_have_count(1)
    expect(chats.filter(has_text=f"a chat to retitle {mark}")).to_have_count(0)
