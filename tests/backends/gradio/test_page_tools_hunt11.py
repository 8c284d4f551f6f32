"""The chat page in a real browser: what a model writes shows as text, however it is placed
(a tool call's name, a line in a list item), and the page fetches nothing it points at (see
kit.py for the scripted model)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from fastapi import FastAPI
from playwright.sync_api import Page, Request, expect

from connectors.function import FunctionInfo
from schema import Message, ModelResponse, Role, ToolCall
from tests.backends.conftest import LiveServer, live_server
from tests.backends.gradio.kit import Served, bot_messages, build_playing, closing, play, send

pytestmark = pytest.mark.browser

CALL = "call:"
SAY = "say:"


async def _play(messages: list[Message], info: FunctionInfo) -> Any:
    """kit.play, and "call:NAME": a call of a tool named NAME (none has that name)."""
    last = messages[-1]
    if last.role is Role.USER and last.content.startswith(CALL):
        name = last.content.removeprefix(CALL)
        return ModelResponse(
            tool_calls=(ToolCall(id=f"n{info.call_number}", name=name, arguments="{}"),)
        )
    if last.role is Role.USER and last.content.startswith(SAY):
        return last.content.removeprefix(SAY)
    if last.role is Role.TOOL:
        return "That tool does not exist."
    return await play(messages, info)


async def _build() -> tuple[FastAPI, Served]:
    return await build_playing(_play)


@pytest.fixture(scope="module")
def server() -> Iterator[LiveServer]:
    with live_server(_build) as running:
        yield running
        running.call(closing(running))


def test_a_tool_name_that_names_an_image_shows_as_text_and_fetches_nothing(tab: Page) -> None:
    """A model steered by a web page could name a tool `![x](https://…?data)`: its step
    title used to be rendered as Markdown and HTML, and the page fetched the address."""
    fetched: list[str] = []
    tab.on("request", lambda request: _note(request, fetched))
    name = '<img src="/leak-html.png" alt="A"> ![B](/leak-markdown.png)'
    send(tab, CALL + name)
    expect(bot_messages(tab).last).to_contain_text("That tool does not exist.")
    step = tab.locator("#chatbot").get_by_text("leak-markdown.png").first
    expect(step).to_be_visible()
    assert tab.locator("#chatbot img[src*=leak]").count() == 0
    assert fetched == []


def test_a_line_of_a_list_item_that_looks_indented_shows_as_text(tab: Page) -> None:
    """An item's text indented under it (four spaces under "- ") is still text, not code: a
    tag in it used to reach the page as HTML, and the page fetched its image."""
    fetched: list[str] = []
    tab.on("request", lambda request: _note(request, fetched))
    reply = (
        "- Steps:\n\n    <img src=/leak-listed.png> is what it said\n\n"
        "* a\n\n  ```\n  x\n\n<img src=/leak-fence.png>"
    )
    send(tab, SAY + reply)
    last = bot_messages(tab).last
    expect(last).to_contain_text("<img src=/leak-listed.png> is what it said")
    expect(last).to_contain_text("<img src=/leak-fence.png>")
    assert tab.locator("#chatbot img[src*=leak]").count() == 0
    assert fetched == []


def test_an_image_from_another_server_that_reaches_the_chat_is_never_fetched(
    tab: Page, server: LiveServer
) -> None:
    """Behind the escaping, the page itself loads images only from the app: should an
    `<img>` naming another server ever reach the chat (a Markdown reading the escaping did
    not foresee), the browser does not send the request at all."""
    elsewhere = server.url.replace("127.0.0.1", "localhost") + "leak-elsewhere.png"
    with tab.expect_event("requestfailed", lambda r: "leak-elsewhere" in r.url) as failed:
        tab.evaluate(
            """(address) => {
                const image = document.createElement('img');
                image.src = address;
                document.querySelector('#chatbot').appendChild(image);
            }""",
            elsewhere,
        )
    assert failed.value.failure == "csp"  # refused before it left the browser


def _note(request: Request, fetched: list[str]) -> None:
    if "leak" in request.url:
        fetched.append(request.url)
