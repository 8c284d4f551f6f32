"""A page login for a name the failed-login throttle paused (login_pause.py), without a
browser: answered 429 with why and for how long, before the page's own login sees it; every
other request, a login for a name not paused among them, reaches the app as it was sent."""

from __future__ import annotations

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from backends.gradio.login_pause import MAX_FORM_BYTES, LoginPause, paused_words
from gui_agent.auth.throttle import LoginThrottle
from tests.connectors.peers import FakeClock

Seen = list[dict[str, str]]
"""The forms the page's stand-in was sent."""


def _app(seen: Seen) -> Starlette:
    """The page's stand-in: it answers what it got (the form as read, its length)."""

    async def login(request: Request) -> JSONResponse:
        body = await request.body()
        form = await request.form()
        fields = {key: str(value) for key, value in form.items()}
        seen.append(fields)
        return JSONResponse({"fields": fields, "length": len(body)}, status_code=400)

    async def other(request: Request) -> JSONResponse:
        return JSONResponse({"length": len(await request.body())})

    return Starlette(
        routes=[Route("/login", login, methods=["POST"]), Route("/x", other, methods=["POST"])]
    )


def _client(throttle: LoginThrottle, seen: Seen, root: str = "") -> httpx.AsyncClient:
    app = LoginPause(_app(seen), throttle=throttle)
    transport = httpx.ASGITransport(app=app, root_path=root)
    return httpx.AsyncClient(transport=transport, base_url="http://page")


def _paused(name: str, clock: FakeClock) -> LoginThrottle:
    throttle = LoginThrottle(free_attempts=2, base_delay_s=30.0, max_delay_s=600.0, clock=clock)
    for _ in range(3):
        throttle.failed(name)
    return throttle


async def test_a_paused_names_login_is_answered_with_why_and_how_long() -> None:
    clock, seen = FakeClock(), Seen()
    throttle = _paused("carol", clock)
    wait = throttle.retry_after("carol")
    assert wait > 0
    async with _client(throttle, seen) as page:
        for send in (
            {"data": {"username": "carol", "password": "right"}},  # URL-encoded
            {"files": {"username": (None, "carol"), "password": (None, "right")}},  # multipart
        ):
            answer = await page.post("/login", **send)
            assert answer.status_code == 429
            assert answer.json() == {"detail": paused_words(wait)}
            assert answer.headers["retry-after"] == str(int(wait + 0.999))
            assert "not checked" in answer.json()["detail"]
        assert seen == []  # the page's own login never saw them
        clock.now += wait + 1  # the pause is over: on to the page, as sent
        answer = await page.post("/login", data={"username": "carol", "password": "right"})
        assert answer.status_code == 400
        assert answer.json()["fields"] == {"username": "carol", "password": "right"}


async def test_everything_else_reaches_the_app_as_it_was_sent() -> None:
    clock, seen = FakeClock(), Seen()
    throttle = _paused("carol", clock)
    async with _client(throttle, seen) as page:
        other = await page.post("/login", data={"username": "dave", "password": "p"})
        assert other.json()["fields"] == {"username": "dave", "password": "p"}
        big = "x" * (MAX_FORM_BYTES * 2)  # more than is read here: handed on whole, unread
        answer = await page.post("/login", data={"username": "carol", "password": big})
        assert answer.status_code == 400 and answer.json()["fields"]["password"] == big
        garbled_body = b"\xff\x00 not a form"
        garbled = await page.post(
            "/login", content=garbled_body, headers={"content-type": "text/plain"}
        )
        assert garbled.status_code == 400 and garbled.json()["length"] == len(garbled_body)
        elsewhere = await page.post("/x", data={"username": "carol"})
        assert elsewhere.json() == {"length": len("username=carol")}
    assert len(seen) == 3


async def test_the_login_is_found_below_a_root_path() -> None:
    clock, seen = FakeClock(), Seen()
    async with _client(_paused("carol", clock), seen, root="/chat") as page:
        answer = await page.post("/chat/login", data={"username": "carol", "password": "p"})
    assert answer.status_code == 429


@pytest.mark.parametrize(("wait", "words"), [(0.2, "1 s"), (59.5, "60 s"), (600, "10 min")])
def test_the_wait_is_said_in_whole_seconds_or_minutes(wait: float, words: str) -> None:
    assert f"paused for {words} more" in paused_words(wait)
