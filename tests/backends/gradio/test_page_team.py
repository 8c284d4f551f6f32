"""The page and the HTTP API on one server, as `gui-agent serve --api` builds it, with login:
chats made, renamed, imported or deleted through the API show in the page's chats list at
once (pushed through the keep-alive, no reload, no polling), only to their owner; and a
person removed with `gui-agent users remove` sees their running reply stop and is signed
out, with nothing they said lost."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Browser, Page, Route, expect

from backends.gradio.presence import REMOVED_NOTE
from backends.server import build_server
from gui_agent.auth.users import UserDB
from gui_agent.config import AppConfig
from gui_agent.manager import SessionManager
from schema import MessageStatus, Role
from tests.backends.api.live import Api
from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import badge, bot_messages, eventually, send, toast

pytestmark = pytest.mark.browser

USERS = {"alice": "alice-password-1", "bob": "bob-password-22"}
CAROLS_PASSWORD = "carol-password-3"  # (each attempt adds a carol of its own)
CLI = Path(sys.executable).with_name("gui-agent")
LONG = " ".join(f"word{i}" for i in range(3000))  # the echo model takes ~30 s to say it
WAIT_MS = 30_000


@dataclass
class Team:
    """The server, and the users file `gui-agent users` edits."""

    live: LiveServer
    users_file: Path

    @property
    def url(self) -> str:
        return self.live.url

    @property
    def manager(self) -> SessionManager:
        manager: SessionManager = self.live.state.__self__.manager  # build_server's cleanup
        return manager


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    tmp = tmp_path_factory.mktemp("team-news")
    users = UserDB(tmp / "users.json")
    for name, password in USERS.items():
        users.add(name, password)
    config = AppConfig(models=("scripted:echo",), data_dir=tmp / "data", auth_file=users.path)
    live = LiveServer(lambda: build_server(config, probe_local=False, with_api=True))
    live.start()
    try:
        yield Team(live, users.path)
    finally:
        live.stop()


def log_in(browser: Browser, server: Team, name: str, password: str = "") -> Page:
    page = browser.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(WAIT_MS)
    page.goto(server.url, wait_until="load")
    page.get_by_test_id("textbox").fill(name)
    page.get_by_test_id("password").fill(password or USERS[name])
    page.get_by_role("button", name="Login").click()
    expect(badge(page)).to_have_text("Ready", timeout=WAIT_MS)
    expect(page.locator("#account")).to_contain_text(f"Signed in as {name}", timeout=WAIT_MS)
    return page


def api_for(server: Team, name: str) -> Api:
    return Api(server.url.rstrip("/")).login(name, USERS[name])


def ok(response: Any, status: int = 200) -> Any:
    assert response.status_code == status, response.text
    return response.json() if status != 204 else None


def test_chats_changed_through_the_api_show_in_the_owners_open_tabs(
    chromium: Browser, server: Team
) -> None:
    page, second = log_in(chromium, server, "alice"), log_in(chromium, server, "alice")
    alice, bob = api_for(server, "alice"), api_for(server, "bob")
    mark = uuid.uuid4().hex[:8]  # (the server is the module's: a rerun finds its own chats)
    made, renamed = f"Made through the API {mark}", f"Renamed through the API {mark}"
    try:
        chats, others = page.locator("#session-list"), second.locator("#session-list")
        page.evaluate("() => { window.__sameDocument = true; }")  # gone if the page reloads
        ok(bob.post("/api/sessions", json={"title": f"Bob's own chat {mark}"}), 201)

        created = ok(alice.post("/api/sessions", json={"title": made}), 201)
        session_id = created["session"]["id"]
        for listed in (chats, others):
            expect(listed).to_contain_text(made, timeout=WAIT_MS)
        # Bob's chat was made before Alice's, and is in neither of her tabs.
        assert "Bob's own chat" not in chats.inner_text() + others.inner_text()

        url = f"/api/sessions/{session_id}"
        ok(alice.request("PATCH", url, json={"title": renamed}))
        expect(chats).to_contain_text(renamed, timeout=WAIT_MS)
        expect(chats).not_to_contain_text(made)

        document = alice.get(f"{url}/export").content
        imported = ok(alice.post("/api/sessions/import", content=document), 201)
        expect(chats.get_by_text(renamed)).to_have_count(2, timeout=WAIT_MS)

        ok(alice.request("DELETE", url), 204)
        ok(alice.request("DELETE", f"/api/sessions/{imported['session']['id']}"), 204)
        for listed in (chats, others):
            expect(listed).not_to_contain_text(renamed, timeout=WAIT_MS)
        assert page.evaluate("() => window.__sameDocument") is True
    finally:
        alice.close()
        bob.close()
        page.context.close()
        second.context.close()


def keep_alive_index(page: Page, server: Team) -> int:
    """The number of the page's keep-alive event, as the browser sends it to the queue."""
    config = page.request.get(server.url.rstrip("/") + "/config").json()
    ids = {c["id"]: c.get("props", {}).get("elem_id") for c in config["components"]}
    for dependency in config["dependencies"]:
        targets = [(ids.get(target), kind) for target, kind in dependency["targets"]]
        if ("keep-alive", "change") in targets and dependency.get("backend_fn"):
            index: int = dependency["id"]
            return index
    raise AssertionError("the page has no keep-alive event")


def test_a_chat_made_while_a_tab_loads_shows_though_its_keep_alive_started_late(
    chromium: Browser, server: Team
) -> None:
    """The page's load lists the chats, and its keep-alive then listens for changes; on a
    busy server the keep-alive can start seconds later. A chat made in between is shown."""
    first = log_in(chromium, server, "alice")
    alice = api_for(server, "alice")
    title = f"Made while a tab loaded {uuid.uuid4().hex[:8]}"
    held: list[Route] = []
    index = keep_alive_index(first, server)

    def hold_the_keep_alive(route: Route) -> None:
        if (route.request.post_data_json or {}).get("fn_index") == index and not held:
            held.append(route)
        else:
            route.continue_()

    late = first.context.new_page()  # (signed in: the same browser)
    late.set_default_timeout(WAIT_MS)
    try:
        late.route("**/gradio_api/queue/join*", hold_the_keep_alive)
        late.goto(server.url, wait_until="load")
        expect(late.locator("#account")).to_contain_text("Signed in as alice")  # listed
        eventually(late, lambda: bool(held), "the tab's keep-alive on its way")
        ok(alice.post("/api/sessions", json={"title": title}), 201)
        expect(first.locator("#session-list")).to_contain_text(title)  # (its keep-alive ran)
        assert title not in late.locator("#session-list").inner_text()
        held[0].continue_()
        expect(late.locator("#session-list")).to_contain_text(title)
    finally:
        alice.close()
        first.context.close()


def remove_with_the_cli(server: Team, name: str) -> None:
    command = [str(CLI), "users", "remove", name, "--auth-file", str(server.users_file)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def test_a_removed_person_sees_the_reply_stop_and_is_signed_out(
    chromium: Browser, server: Team
) -> None:
    # (a person of this attempt's own: a rerun after a failed attempt starts afresh)
    carol = f"carol-{uuid.uuid4().hex[:8]}"
    UserDB(server.users_file).add(carol, CAROLS_PASSWORD)
    page = log_in(chromium, server, carol, CAROLS_PASSWORD)
    try:
        send(page, LONG)
        expect(badge(page)).to_have_text("Working…", timeout=WAIT_MS)
        expect(bot_messages(page).last).to_contain_text("word1 word2", timeout=WAIT_MS)

        remove_with_the_cli(server, carol)

        removed = toast(page, "Your account was removed from this server")
        expect(removed).to_be_visible(timeout=WAIT_MS)
        expect(badge(page)).to_have_text("Your turn", timeout=WAIT_MS)
        page.reload(wait_until="load")  # the page login is gone, not just the page
        expect(page.get_by_role("button", name="Login")).to_be_visible(timeout=WAIT_MS)
        assert page.locator("#chat-input").count() == 0
    finally:
        page.context.close()

    store, call = server.manager.store, server.live.call
    (record,) = call(store.list_sessions(carol))
    user, reply = call(store.load_messages(record.id))
    assert (user.role, user.content) == (Role.USER, LONG)
    assert reply.status is MessageStatus.INTERRUPTED and "word1 word2" in reply.content
    assert REMOVED_NOTE.startswith("Your account was removed from this server")


def test_a_tab_signed_out_meanwhile_gives_back_the_message_it_could_not_send(
    chromium: Browser, server: Team
) -> None:
    """A new password ends the person's page logins (a restart ends everyone's): the open
    tab's next send was refused without a word, and its message, gone from the box, lost."""
    erin = f"erin-{uuid.uuid4().hex[:8]}"
    users = UserDB(server.users_file)
    users.add(erin, "erin-password-1")
    page = log_in(chromium, server, erin, "erin-password-1")
    try:
        send(page, "first message")
        expect(bot_messages(page).last).to_contain_text("first message")
        users.add(erin, "erin-password-2", replace=True)
        page.wait_for_timeout(3000)  # (the server reads the users file about once a second)
        box = page.locator("#chat-input textarea")
        box.fill("said after the password changed")
        box.press("Enter")
        notice = page.locator("#ga-input-notice")
        expect(notice).to_contain_text("You are signed out", timeout=WAIT_MS)
        expect(box).to_have_value("said after the password changed")
        box.press("Enter")  # refused at once now, the message kept
        expect(box).to_have_value("said after the password changed")
        page.reload(wait_until="load")
        page.get_by_test_id("textbox").fill(erin)
        page.get_by_test_id("password").fill("erin-password-2")
        page.get_by_role("button", name="Login").click()
        expect(page.locator("#account")).to_contain_text(f"Signed in as {erin}", timeout=WAIT_MS)
        expect(page.locator("#chat-input textarea")).to_have_value(
            "said after the password changed", timeout=WAIT_MS
        )
        # The next person to sign in on this tab is not given what Erin typed.
        page.locator("#account").get_by_text("Log out").click()
        page.get_by_test_id("textbox").fill("bob")
        page.get_by_test_id("password").fill(USERS["bob"])
        page.get_by_role("button", name="Login").click()
        expect(page.locator("#account")).to_contain_text("Signed in as bob", timeout=WAIT_MS)
        expect(badge(page)).to_have_text("Ready", timeout=WAIT_MS)
        page.wait_for_timeout(1000)  # (a draft would be given back once the chat is shown)
        expect(page.locator("#chat-input textarea")).to_have_value("")
    finally:
        page.context.close()
    (record,) = server.live.call(server.manager.store.list_sessions(erin))
    said = server.live.call(server.manager.store.load_messages(record.id))
    assert "said after the password changed" not in [m.content for m in said]
