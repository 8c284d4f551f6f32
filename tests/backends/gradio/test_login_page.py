"""Team mode through the browser: two people log in on the real page, each sees only their
own conversations, and a wrong password gets nowhere."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, Page, expect

from backends.server import build_server
from gui_agent.auth.users import UserDB
from gui_agent.config import AppConfig
from gui_agent.manager import SessionManager
from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import tiny_png, upload, user_messages

pytestmark = pytest.mark.browser

USERS = {
    "alice": "alice-password-1",
    "bob": "bob-password-22",
    "carol": "carol-password-3",
    "dave": "dave-password-44",
}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    tmp = tmp_path_factory.mktemp("team")
    users = UserDB(tmp / "users.json")
    for name, password in USERS.items():
        users.add(name, password)
    config = AppConfig(
        models=("scripted:echo",), data_dir=tmp / "data", auth_file=tmp / "users.json"
    )
    live = LiveServer(lambda: build_server(config, probe_local=False))
    live.start()
    try:
        yield live
    finally:
        live.stop()


def log_in(browser: Browser, url: str, name: str, password: str) -> Page:
    page = browser.new_context().new_page()
    page.goto(url, wait_until="load")
    page.get_by_test_id("textbox").fill(name)
    page.get_by_test_id("password").fill(password)
    page.get_by_role("button", name="Login").click()
    return page


def say(page: Page, text: str) -> None:
    page.locator("#chat-input textarea").fill(text)
    page.locator("#send-btn").click()
    expect(page.locator("#state-badge")).to_have_text("Your turn", timeout=30_000)
    expect(page.get_by_text("You said:").last).to_be_visible()


def test_two_people_see_only_their_own_sessions(chromium: Browser, server: LiveServer) -> None:
    run = uuid.uuid4().hex[:8]  # (a rerun's chats differ from the first attempt's)
    plan, groceries = f"alice's secret plan {run}", f"bob's grocery list {run}"
    alice = log_in(chromium, server.url, "alice", USERS["alice"])
    expect(alice.locator("#chat-input")).to_be_visible(timeout=30_000)
    say(alice, plan)
    bob = log_in(chromium, server.url, "bob", USERS["bob"])
    expect(bob.locator("#chat-input")).to_be_visible(timeout=30_000)
    say(bob, groceries)
    expect(bob.locator("#session-list")).to_contain_text(groceries)
    assert plan not in bob.content()
    alice.reload(wait_until="load")
    expect(alice.locator("#session-list")).to_contain_text(plan)
    assert groceries not in alice.content()
    titles = server.call(_titles_by_owner(server))
    assert {name: [t for t in kept if run in t] for name, kept in titles.items()} == {
        "alice": [plan],
        "bob": [groceries],
        "carol": [],
        "dave": [],
    }


async def _titles_by_owner(server: LiveServer) -> dict[str, list[str]]:
    """What the store holds for each person (build_server's cleanup is a _Shutdown's run)."""
    manager: SessionManager = server.state.__self__.manager
    return {name: [r.title for r in await manager.list(name)] for name in USERS}


def test_a_picture_is_served_by_address_to_the_one_who_sent_it_only(
    chromium: Browser, server: LiveServer, tmp_path: Path
) -> None:
    """The chat links an attached picture (`media/<token>`) instead of carrying its data; the
    address answers its owner's login, not another person's, nor a request without one."""
    picture = tmp_path / "red.png"
    picture.write_bytes(tiny_png())
    alice = log_in(chromium, server.url, "alice", USERS["alice"])
    expect(alice.locator("#chat-input")).to_be_visible(timeout=30_000)
    upload(alice, "Attach images", picture)
    expect(alice.locator("#attach-note")).to_contain_text("1 image will go")
    say(alice, f"what colour is this? {uuid.uuid4().hex[:8]}")
    shown = user_messages(alice).last.locator("img")
    expect(shown).to_have_count(1)
    source = shown.get_attribute("src") or ""
    assert source.startswith("media/"), source
    alice.wait_for_function(
        "(img) => img.complete && img.naturalWidth === 2", arg=shown.element_handle()
    )
    assert "data:image/png" not in alice.locator("#chatbot").inner_html()  # (icons are SVG)

    address = server.url.rstrip("/") + "/" + source
    own = alice.request.get(address)
    assert own.status == 200 and own.body() == tiny_png()
    assert own.headers["content-type"] == "image/png"
    assert "private" in own.headers["cache-control"]
    bob = log_in(chromium, server.url, "bob", USERS["bob"])
    expect(bob.locator("#chat-input")).to_be_visible(timeout=30_000)
    assert bob.request.get(address).status == 404  # signed in, but not the one it was shown to
    assert httpx.get(address, timeout=30).status_code == 401  # not signed in
    alice.context.close()
    bob.context.close()


def test_the_page_says_who_is_signed_in_and_logs_out(chromium: Browser, server: LiveServer) -> None:
    page = log_in(chromium, server.url, "alice", USERS["alice"])
    account = page.locator("#account")
    expect(account).to_contain_text("Signed in as alice", timeout=30_000)
    page.get_by_role("link", name="Log out").click()
    expect(page.get_by_role("button", name="Login")).to_be_visible(timeout=15_000)
    assert page.locator("#chat-input").count() == 0
    page.goto(server.url, wait_until="load")  # the login is gone, not just the page
    expect(page.get_by_role("button", name="Login")).to_be_visible(timeout=15_000)
    page.context.close()


def test_a_wrong_password_does_not_log_in(chromium: Browser, server: LiveServer) -> None:
    page = log_in(chromium, server.url, "alice", "not-her-password")
    expect(page.get_by_text("Incorrect Credentials")).to_be_visible(timeout=15_000)
    # Gradio's form cannot say a name is paused, so the form explains it up front
    expect(page.get_by_text("After 5 wrong passwords for a name")).to_be_visible()
    assert page.locator("#chat-input").count() == 0


def test_after_a_wrong_password_the_name_stays_and_only_the_password_is_typed_again(
    chromium: Browser, server: LiveServer
) -> None:
    page = log_in(chromium, server.url, "dave", "not-his-password")
    expect(page.get_by_text("Incorrect Credentials")).to_be_visible(timeout=15_000)
    # Gradio's form empties both boxes; the early script gives the name back
    expect(page.get_by_test_id("textbox")).to_have_value("dave")
    expect(page.get_by_test_id("password")).to_have_value("")
    expect(page.get_by_test_id("password")).to_be_focused()
    page.keyboard.type(USERS["dave"])
    page.keyboard.press("Enter")
    expect(page.locator("#chat-input")).to_be_visible(timeout=30_000)  # the name went too
    page.context.close()


def test_guessing_on_the_page_and_the_api_counts_together(
    chromium: Browser, server: LiveServer
) -> None:
    """Gradio's login form and POST /api/login share the failed-login count per user name;
    once it is used up, the right password is refused on both until the wait is over, and
    the page's form says the name is paused and for how long (not "Incorrect credentials",
    which had the person doubt a password that was right)."""
    page = chromium.new_context().new_page()  # (ready first: the pause is short)
    page.goto(server.url, wait_until="load")
    page.get_by_test_id("textbox").fill("carol")
    page.get_by_test_id("password").fill(USERS["carol"])
    with httpx.Client(base_url=server.url, timeout=30) as http:

        def page_login(password: str) -> httpx.Response:
            return http.post("login", data={"username": "carol", "password": password})

        assert [page_login(f"guess-{n}").status_code for n in range(5)] == [400] * 5
        # guess on until the pause left is long enough for the checks below (it doubles
        # with each wrong password checked: 1 s, 2 s, 4 s)
        for n in range(5, 15):
            guess = page_login(f"guess-{n}")
            if guess.status_code == 429 and int(guess.headers["Retry-After"]) >= 3:
                break
            if guess.status_code == 429:
                time.sleep(int(guess.headers["Retry-After"]))
        else:
            raise AssertionError("the name was never paused for 3 s")
        paused = page_login(USERS["carol"])  # the right password: not even checked
        assert paused.status_code == 429 and int(paused.headers["Retry-After"]) >= 1
        assert "paused" in paused.json()["detail"]
        api = http.post("api/login", json={"username": "carol", "password": USERS["carol"]})
        assert api.status_code == 429 and int(api.headers["Retry-After"]) >= 1
    page.get_by_role("button", name="Login").click()
    note = page.get_by_role("alert").filter(has_text="Too many wrong passwords for this name")
    expect(note).to_be_visible(timeout=15_000)
    expect(page.get_by_test_id("textbox")).to_have_value("carol")  # nothing to type again
    assert page.locator("#chat-input").count() == 0
    page.context.close()
