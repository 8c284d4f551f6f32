"""A new password ends the person's existing logins: API tokens issued under the old password
are refused (their open event streams end with `closed`), page logins end within the users
watcher's interval, and the new password works at once. Their sessions and everything said
in them stay, usable after signing in again; other people are not touched."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from backends.server import build_server
from gui_agent.auth import UserDB
from gui_agent.config import AppConfig
from tests.backends.api.live import Api, Backend, is_idle, running_backend
from tests.backends.conftest import LiveServer, live_server

ALICE = ("alice", "alice-password-1")
BOB = ("bob", "bob-password-22")
NEW = "alice-new-password-2"
REFUSED = "the password was changed after this token was issued; log in again"
CLI = Path(sys.executable).with_name("gui-agent")
PAGE_SIGN_OUT_GUARD_S = 15.0
"""A hang guard while the server's users watcher (1 s) notices the file, not a timing claim."""


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[Backend]:
    # No keep-alives: a stream that fails to end times the client out (20 s) instead.
    options = {"auth_recheck_s": 0.2, "keepalive_s": 600.0}
    with running_backend(tmp_path, users=[ALICE, BOB], **options) as running:
        yield running


def set_password_with_the_cli(users: UserDB, name: str, password: str) -> None:
    """`gui-agent users add NAME --replace`: another process rewrites the users file."""
    command = [str(CLI), "users", "add", name, "--replace", "--password-stdin"]
    done = subprocess.run(
        [*command, "--auth-file", str(users.path)],
        input=password + "\n",
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def error_of(response: httpx.Response) -> dict[str, str]:
    error: dict[str, str] = response.json()["error"]
    return error


def test_a_new_password_ends_the_old_tokens_and_their_streams(backend: Backend) -> None:
    alice, bob = backend.client().login(*ALICE), backend.client().login(*BOB)
    session_id = alice.create_session()
    alice.send(session_id, "remember this")
    assert backend.users is not None
    with alice.events(session_id) as stream:
        set_password_with_the_cli(backend.users, ALICE[0], NEW)
        closed = next(item for item in stream.sse if item.id is None)
        assert next(stream.sse, None) is None
    assert closed.event == "closed"
    assert json.loads(closed.data) == {"error": {"code": "unauthorized", "message": REFUSED}}

    refused = alice.get("/api/sessions")
    assert refused.status_code == 401 and error_of(refused)["message"] == REFUSED
    assert refused.headers["www-authenticate"] == 'Bearer error="invalid_token"'
    assert bob.get("/api/sessions").status_code == 200  # nobody else is signed out

    old_login = {"username": ALICE[0], "password": ALICE[1]}
    old = backend.client().http.post("/api/login", json=old_login)
    assert old.status_code == 401
    again = backend.client().login(ALICE[0], NEW)
    assert again.messages(session_id)[0].content == "remember this"
    with again.events(session_id) as stream:
        again.send(session_id, "still here")
        assert is_idle(stream.until(is_idle)[-1])


def test_a_token_without_a_password_fingerprint_is_refused_in_password_mode(
    backend: Backend,
) -> None:
    """Tokens from before fingerprints (or minted without one) name no password: refused."""
    bare = backend.client(backend.tokens.issue("alice"))
    response = bare.get("/api/sessions")
    assert response.status_code == 401 and error_of(response)["message"] == REFUSED


def page_user(http: httpx.Client) -> str | None:
    response = http.get("/gradio_api/user")
    assert response.status_code == 200
    user: str | None = response.json()
    return user


def page_login(base_url: str, name: str, password: str) -> httpx.Client:
    http = httpx.Client(base_url=base_url, timeout=20)
    response = http.post("/login", data={"username": name, "password": password})
    assert response.status_code == 200, response.text
    assert page_user(http) == name
    return http


def test_a_new_password_ends_the_page_logins_too(tmp_path: Path) -> None:
    users = UserDB(tmp_path / "users.json")
    for name, password in (ALICE, BOB):
        users.add(name, password)
    config = AppConfig(
        models=("scripted:echo",), data_dir=tmp_path / "data", auth_file=users.path, port=0
    )
    server: LiveServer
    with live_server(lambda: build_server(config, probe_local=False)) as server:
        base = server.url.rstrip("/")
        alices, bobs = page_login(base, *ALICE), page_login(base, *BOB)
        api = Api(base)
        try:
            users.add(ALICE[0], NEW, replace=True)
            deadline = time.monotonic() + PAGE_SIGN_OUT_GUARD_S
            while page_user(alices) is not None:
                assert time.monotonic() < deadline, "the page login outlived the password"
                time.sleep(0.05)
            assert page_user(bobs) == "bob"
            page_login(base, ALICE[0], NEW).close()  # (asserts the new login is alice's)
            assert api.login(ALICE[0], NEW).get("/api/sessions").status_code == 200
        finally:
            for client in (alices, bobs, api.http):
                client.close()
