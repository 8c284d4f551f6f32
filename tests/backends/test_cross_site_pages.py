"""A page on another web site (or on this machine at another port) tries to act on the app
through a person's browser: it submits a form or sends a no-cors fetch, which browsers send
without asking the app first. The app does nothing for it, and the person's own page still
signs in, sends and uploads as before.

A second HTTP server on another loopback port serves the hostile page. Seen from the app at
http://127.0.0.1:PORT, http://localhost:OTHER is another site, and http://127.0.0.1:OTHER is
the same site but another origin (cookies of the same site go along with its requests).
"""

from __future__ import annotations

import html
import json
import secrets
import threading
from collections.abc import Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest
from gradio.utils import get_upload_folder
from playwright.sync_api import Browser, Page, expect

from backends.server import build_server
from gui_agent.auth import UserDB
from gui_agent.config import AppConfig
from tests.backends.conftest import LiveServer
from tests.backends.gradio.kit import tiny_png, upload

pytestmark = pytest.mark.browser

ALICE, ALICE_PASSWORD = "alice", "alice-password-1"
MALLORY, MALLORY_PASSWORD = "mallory", "mallory-password-1"
WAIT_MS = 30_000


class HostilePages(ThreadingHTTPServer):
    """Serves, at /NAME, the HTML put in `pages[NAME]`."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _HostileHandler)
        self.pages: dict[str, str] = {}
        self.port = int(self.server_address[1])

    def url(self, host: str, name: str) -> str:
        return f"http://{host}:{self.port}/{name}"


class _HostileHandler(BaseHTTPRequestHandler):
    server: HostilePages

    def do_GET(self) -> None:
        body = self.server.pages.get(self.path.lstrip("/"))
        if body is None:
            self.send_error(HTTPStatus.NOT_FOUND)
            return
        data = body.encode()
        self.send_response(HTTPStatus.OK)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        return  # quiet: the test reads what the app did, not this server's log


@pytest.fixture(scope="module")
def hostile() -> Iterator[HostilePages]:
    pages = HostilePages()
    thread = threading.Thread(target=pages.serve_forever, name="hostile-site", daemon=True)
    thread.start()
    try:
        yield pages
    finally:
        pages.shutdown()
        pages.server_close()
        thread.join(10)


@pytest.fixture(scope="module")
def team(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The real server (`build_server`) with a users file: alice, and mallory, who also has
    an account and wants alice to work under it."""
    tmp = tmp_path_factory.mktemp("team")
    users = UserDB(tmp / "users.json")
    users.add(ALICE, ALICE_PASSWORD)
    users.add(MALLORY, MALLORY_PASSWORD)
    config = AppConfig(models=("scripted:echo",), data_dir=tmp / "data", auth_file=users.path)
    live = LiveServer(lambda: build_server(config, probe_local=False))
    live.start()
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture(scope="module")
def local(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """The real server without login, on loopback, as `gui-agent serve` runs by default."""
    tmp = tmp_path_factory.mktemp("local")
    config = AppConfig(models=("scripted:echo",), data_dir=tmp / "data")
    live = LiveServer(lambda: build_server(config, probe_local=False))
    live.start()
    try:
        yield live
    finally:
        live.stop()


SITES = {"another-site": "localhost", "same-site-other-port": "127.0.0.1"}


def app_origin(server: LiveServer) -> str:
    return server.url.rstrip("/")


def sign_in(page: Page, server: LiveServer, name: str, password: str) -> None:
    page.goto(server.url, wait_until="load")
    page.get_by_test_id("textbox").fill(name)
    page.get_by_test_id("password").fill(password)
    page.get_by_role("button", name="Login").click()
    expect(page.locator("#chat-input")).to_be_visible(timeout=WAIT_MS)


def say(page: Page, text: str) -> None:
    page.locator("#chat-input textarea").fill(text)
    page.locator("#chat-input textarea").press("Enter")
    expect(page.locator("#state-badge")).to_have_text("Your turn", timeout=WAIT_MS)
    bot = page.locator('#chatbot [data-testid="bot"]').last
    expect(bot).to_contain_text(text, timeout=WAIT_MS)  # the echo model says it back


def login_form(app: str, name: str, password: str) -> str:
    """A page that signs whoever opens it in to `app` as `name`, with no click."""
    return f"""<!doctype html><html><body>
<form id="f" method="post" action="{html.escape(app)}/login">
  <input name="username" value="{html.escape(name)}">
  <input name="password" value="{html.escape(password)}">
</form>
<script>document.getElementById("f").submit();</script>
</body></html>"""


def silent_posts(app: str, upload_name: str, join_body: str | None) -> str:
    """A page that sends "simple" cross-origin POSTs (no preflight, cookies included): a
    file upload, and a message to the page's queue when `join_body` is given. It sets its
    title to "sent" once the browser has sent them."""
    join = (
        f"""fetch({json.dumps(app + "/gradio_api/queue/join")}, {{method: "POST",
            mode: "no-cors", credentials: "include",
            headers: {{"Content-Type": "text/plain"}}, body: {json.dumps(join_body)}}}),"""
        if join_body is not None
        else ""
    )
    return f"""<!doctype html><html><body><script>
const form = new FormData();
form.append("files", new File(["planted by another site"], {json.dumps(upload_name)}));
Promise.allSettled([
  {join}
  fetch({json.dumps(app + "/gradio_api/upload")}, {{method: "POST", mode: "no-cors",
        credentials: "include", body: form}}),
]).then(() => {{ document.title = "sent"; }});
</script></body></html>"""


def planted(upload_name: str) -> list[Path]:
    """Where Gradio stored a file uploaded under `upload_name` (removed once found, so a
    failing run leaves nothing behind)."""
    found = sorted(Path(get_upload_folder()).glob(f"*/{upload_name}"))
    for path in found:
        path.unlink()
    return found


def run_hostile(browser_page: Page, url: str) -> None:
    browser_page.goto(url, wait_until="load")
    browser_page.wait_for_function("document.title === 'sent'", timeout=WAIT_MS)


@pytest.mark.parametrize("site", SITES.values(), ids=SITES.keys())
def test_another_site_cannot_sign_a_person_in_as_someone_else_or_upload_as_them(
    chromium: Browser, team: LiveServer, hostile: HostilePages, site: str, tmp_path: Path
) -> None:
    context = chromium.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        sign_in(page, team, ALICE, ALICE_PASSWORD)
        expect(page.locator("#account")).to_contain_text(f"Signed in as {ALICE}")

        # The other site's form signs the browser in as mallory (what alice then types
        # would go to mallory's account).
        name = f"login-{secrets.token_hex(4)}"
        hostile.pages[name] = login_form(app_origin(team), MALLORY, MALLORY_PASSWORD)
        attack = context.new_page()
        attack.set_default_timeout(WAIT_MS)
        attack.goto(hostile.url(site, name))
        attack.wait_for_url(f"{app_origin(team)}/login")
        expect(attack.locator("body")).to_contain_text("a page at another address sent it")
        attack.close()

        # A file sent with alice's page cookie.
        upload_name = f"cross-site-{secrets.token_hex(6)}.txt"
        name = f"upload-{secrets.token_hex(4)}"
        hostile.pages[name] = silent_posts(app_origin(team), upload_name, None)
        attack = context.new_page()
        run_hostile(attack, hostile.url(site, name))
        attack.close()
        assert planted(upload_name) == []

        # Alice is still alice, and her own page signs in, sends and uploads as before.
        page.reload(wait_until="load")
        expect(page.locator("#account")).to_contain_text(f"Signed in as {ALICE}")
        say(page, "alice works as alice")
        picture = tmp_path / "red.png"
        picture.write_bytes(tiny_png())
        upload(page, "Attach images", picture)
        expect(page.locator("#attach-note")).to_contain_text("1 image will go with your next")
    finally:
        context.close()


def framing_page(app: str) -> str:
    """A page that shows the app in a frame (to lay something over it)."""
    return f"""<!doctype html><html><body>
<iframe id="app" src="{html.escape(app)}/" width="1000" height="700"
        onload="document.title = 'framed'"></iframe>
</body></html>"""


@pytest.mark.parametrize("site", SITES.values(), ids=SITES.keys())
def test_another_site_cannot_show_the_app_in_a_frame(
    chromium: Browser, local: LiveServer, hostile: HostilePages, site: str
) -> None:
    """Framed, the app could be hidden under a decoy and clicked on unawares."""
    context = chromium.new_context()
    try:
        attack = context.new_page()
        attack.set_default_timeout(WAIT_MS)
        name = f"frame-{secrets.token_hex(4)}"
        hostile.pages[name] = framing_page(app_origin(local))
        attack.goto(hostile.url(site, name))
        attack.wait_for_function("document.title === 'framed'")
        (frame,) = attack.main_frame.child_frames
        assert not frame.url.startswith(app_origin(local)), frame.url  # an error page
        assert frame.locator("#chat-input").count() == 0
        # Opened by itself, the app works as ever.
        own = context.new_page()
        own.goto(local.url, wait_until="load")
        expect(own.locator("#chat-input")).to_be_visible(timeout=WAIT_MS)
    finally:
        context.close()


def sign_out_page(app: str) -> str:
    """A page that points an image at the app's logout, then goes there itself."""
    logout = json.dumps(app + "/logout")
    return f"""<!doctype html><html><body><script>
const image = new Image();
image.onload = image.onerror = () => {{ window.location.href = {logout}; }};
image.src = {logout} + "?from=image";
</script></body></html>"""


@pytest.mark.parametrize("site", SITES.values(), ids=SITES.keys())
def test_another_site_cannot_sign_a_person_out(
    chromium: Browser, team: LiveServer, hostile: HostilePages, site: str
) -> None:
    context = chromium.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        sign_in(page, team, ALICE, ALICE_PASSWORD)
        name = f"logout-{secrets.token_hex(4)}"
        hostile.pages[name] = sign_out_page(app_origin(team))
        attack = context.new_page()
        attack.set_default_timeout(WAIT_MS)
        attack.goto(hostile.url(site, name))
        attack.wait_for_url(f"{app_origin(team)}/logout")
        expect(attack.locator("body")).to_contain_text("a page at another address sent it")
        attack.close()
        page.reload(wait_until="load")
        expect(page.locator("#account")).to_contain_text(f"Signed in as {ALICE}")
        # Her own page's "Log out" still signs her out.
        page.get_by_role("link", name="Log out").click()
        expect(page.get_by_role("button", name="Login")).to_be_visible()
    finally:
        context.close()


@pytest.mark.parametrize("site", SITES.values(), ids=SITES.keys())
def test_another_site_cannot_post_to_the_app_without_login(
    chromium: Browser, local: LiveServer, hostile: HostilePages, site: str
) -> None:
    context = chromium.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        joins: list[str] = []
        page.on(
            "request",
            lambda request: (
                joins.append(request.post_data or "")
                if "/gradio_api/queue/join" in request.url
                else None
            ),
        )
        page.goto(local.url, wait_until="load")
        expect(page.locator("#state-badge")).to_have_text("Ready")  # the page has loaded
        text = f"my own chat {secrets.token_hex(4)}"
        say(page, text)  # the page's own POSTs (queue/join) work
        # the send itself (its text is its second value; follow-ups carry it later on)
        (own_send,) = [body for body in joins if json.loads(body)["data"][1:2] == [text]]
        sessions_before = _sessions(local)
        assert text in [title for _id, title in sessions_before]

        # The other site replays the page's own "send" as a no-cors text/plain POST, under
        # a tab id of its own, with another text; and uploads a file.
        forged = json.loads(own_send)
        forged["session_hash"] = secrets.token_hex(6)
        join_body = json.dumps(forged).replace(text, "sent by another site")
        upload_name = f"cross-site-{secrets.token_hex(6)}.txt"
        name = f"posts-{secrets.token_hex(4)}"
        hostile.pages[name] = silent_posts(app_origin(local), upload_name, join_body)
        attack = context.new_page()
        run_hostile(attack, hostile.url(site, name))
        attack.close()

        assert planted(upload_name) == []
        assert _sessions(local) == sessions_before
        say(page, "and a second message")  # the page still works
        assert _sessions(local) == sessions_before
    finally:
        context.close()


def _sessions(server: LiveServer) -> list[tuple[str, str]]:
    """(id, title) of every chat of "local", through the API as a program calls it."""
    with httpx.Client(base_url=server.url, timeout=20) as http:
        token = http.post("/api/login").json()["token"]
        answer = http.get("/api/sessions", headers={"Authorization": f"Bearer {token}"})
        answer.raise_for_status()
        return sorted((item["id"], item["title"]) for item in answer.json()["sessions"])
