"""The script the page runs before Gradio's own (early_script.py): where the middleware
puts it, what it leaves alone, and, in a real browser, what it is for: a page that does
nothing asks for no animation frames."""

from __future__ import annotations

import gzip
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route

from backends.gradio.assets import ASSETS_DIR
from backends.gradio.early_script import SCRIPT_FILES, EarlyScript, early_script, with_script
from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import COUNT_FRAMES, WAIT_MS, ready, send, wait_idle

PAGE = b"<!doctype html><html><head><meta charset='utf-8'></head><body>hi</body></html>"
SCRIPT = "window.early = true;"
TAG = b"<script>window.early = true;</script>"


async def page(_: Request) -> Response:
    return Response(PAGE, media_type="text/html")


async def upper_head(_: Request) -> Response:
    return Response(b'<HTML><HEAD lang="en"><title>t</title></HEAD></HTML>', media_type="text/html")


async def in_parts(_: Request) -> Response:
    async def parts() -> AsyncIterator[bytes]:
        yield PAGE[:20]  # the <head> tag is split between two parts
        yield PAGE[20:]

    return StreamingResponse(parts(), media_type="text/html")


async def as_json(_: Request) -> Response:
    return Response(b'{"html": "<head></head>"}', media_type="application/json")


async def compressed(_: Request) -> Response:
    body = gzip.compress(PAGE)
    return Response(body, media_type="text/html", headers={"content-encoding": "gzip"})


async def headless(_: Request) -> Response:
    return Response(b"<p>no head here</p>", media_type="text/html")


def app(script: str = SCRIPT) -> EarlyScript:
    routes = [
        Route("/", page, methods=["GET", "HEAD", "POST"]),
        Route("/upper", upper_head),
        Route("/parts", in_parts),
        Route("/json", as_json),
        Route("/compressed", compressed),
        Route("/headless", headless),
    ]
    return EarlyScript(Starlette(routes=routes), script=script)


async def fetch(path: str, method: str = "GET", script: str = SCRIPT) -> httpx.Response:
    transport = httpx.ASGITransport(app=app(script))
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
        return await client.request(method, path)


async def test_a_page_gets_the_script_first_in_its_head_with_its_length_right() -> None:
    answer = await fetch("/")
    assert answer.content == PAGE.replace(b"<head>", b"<head>" + TAG)
    assert int(answer.headers["content-length"]) == len(answer.content)
    upper = await fetch("/upper")
    assert upper.content.startswith(b'<HTML><HEAD lang="en">' + TAG + b"<title>")
    parts = await fetch("/parts")
    assert parts.content == PAGE.replace(b"<head>", b"<head>" + TAG)
    assert int(parts.headers["content-length"]) == len(parts.content)


@pytest.mark.parametrize("path", ["/json", "/compressed", "/headless"])
async def test_answers_that_are_not_a_plain_page_with_a_head_pass_unchanged(path: str) -> None:
    plain = await fetch(path, script="")
    answer = await fetch(path)
    assert answer.content == plain.content
    assert answer.headers.get("content-length") == plain.headers.get("content-length")


async def test_only_a_get_is_changed_and_a_head_tells_its_length() -> None:
    posted = await fetch("/", method="POST")
    assert posted.content == PAGE
    assert posted.headers["content-length"] == str(len(PAGE))
    got = await fetch("/")
    for path in ("/", "/parts", "/json", "/compressed", "/headless"):
        head, get = await fetch(path, method="HEAD"), await fetch(path)
        assert head.status_code == 200 and head.content == b"", path
        assert head.headers["content-length"] == get.headers["content-length"], path
        assert head.headers["content-type"] == get.headers["content-type"], path
    assert int((await fetch("/", method="HEAD")).headers["content-length"]) == len(got.content)


async def test_other_front_ends_pages_are_left_as_they_are() -> None:
    routes = [Route("/react/", page), Route("/reactor", page), Route("/react", page)]
    wrapped = EarlyScript(Starlette(routes=routes), script=SCRIPT, skip=("/react",))
    transport = httpx.ASGITransport(app=wrapped)
    async with httpx.AsyncClient(transport=transport, base_url="http://app") as client:
        assert (await client.get("/react/")).content == PAGE
        assert (await client.get("/react")).content == PAGE
        assert TAG in (await client.get("/reactor")).content  # a prefix of a name is not it
    behind = httpx.ASGITransport(app=wrapped, root_path="/gui")  # a proxy's path prefix
    async with httpx.AsyncClient(transport=behind, base_url="http://app") as client:
        assert (await client.get("/gui/react/")).content == PAGE


async def test_without_a_script_nothing_changes(tmp_path: Path) -> None:
    assert early_script(tmp_path) == ""  # (no file there)
    answer = await fetch("/", script=early_script(tmp_path))
    assert answer.content == PAGE


def test_a_script_that_would_end_its_own_element_is_refused(tmp_path: Path) -> None:
    (tmp_path / SCRIPT_FILES[-1]).write_text("const s = '</SCRIPT>';", encoding="utf-8")
    with pytest.raises(ValueError, match="cannot be put inline"):
        early_script(tmp_path)
    assert early_script(ASSETS_DIR).startswith("// Runs in the page's <head>")


def test_the_script_is_its_parts_in_order_and_a_missing_part_is_left_out(tmp_path: Path) -> None:
    first, second, third, fourth = SCRIPT_FILES
    (tmp_path / second).write_text("second();\n", encoding="utf-8")
    assert early_script(tmp_path) == "second();"
    (tmp_path / third).write_text("third();\n", encoding="utf-8")
    (tmp_path / first).write_text("first();\n", encoding="utf-8")
    (tmp_path / fourth).write_text("fourth();\n", encoding="utf-8")
    assert early_script(tmp_path) == "first();\nsecond();\nthird();\nfourth();"
    served = early_script(ASSETS_DIR)
    assert served.index("window.requestAnimationFrame") < served.index("window.fetch")
    assert served.index("gives the name back") < served.index("queue/data")
    assert served.index("queue/data") < served.index("gui-agent-signed-out")


def test_with_script_goes_after_the_first_head_tag_only() -> None:
    assert with_script(b"<head></head><head></head>", b"X") == b"<head>X</head><head></head>"
    assert with_script(b"<header><head>", b"X") == b"<header><head>X"


# -- in a real browser ---------------------------------------------------------------------


@pytest.fixture
def counted(chromium: Browser, server: LiveServer) -> Page:
    context = chromium.new_context()
    context.add_init_script(COUNT_FRAMES)
    tab = context.new_page()
    tab.set_default_timeout(WAIT_MS)
    tab.goto(server.url, wait_until="load")
    ready(tab)
    return tab


@pytest.mark.browser
def test_a_page_that_does_nothing_asks_for_no_animation_frames(counted: Page) -> None:
    try:
        send(counted, "then nothing")
        wait_idle(counted)
        # What the reply's last update set moving (a toast, a transition) ends within a few
        # seconds; then a whole second goes by without a frame asked for. Gradio's count of
        # how long the events ran asked for one every frame, for as long as the tab was
        # open; it now ticks on a timer instead.
        quiet = []
        for _ in range(15):
            counted.evaluate("window.__framesAsked = 0")
            counted.wait_for_timeout(1000)
            quiet.append(counted.evaluate("window.__framesAsked"))
            if quiet[-1] == 0:
                break
        assert quiet[-1] == 0, f"frames asked for, second by second: {quiet}"
    finally:
        counted.context.close()
