"""`POST /api/logout` signs out the token it carries: refused from then on (an open event
stream included), while the person's other tokens stay good; the Python clients' `logout`."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from backends.api.async_client import AsyncGuiAgentClient
from backends.api.client import GuiAgentClient, Unauthorized
from gui_agent.auth import REVOKED_FILE_NAME, RevokedTokens
from tests.backends.api.live import ALICE, Backend, running_backend


@pytest.fixture
def backend(tmp_path: Path) -> Iterator[Backend]:
    with running_backend(tmp_path, users=[ALICE], auth_recheck_s=0.2) as running:
        yield running


def test_a_signed_out_token_is_refused_and_the_persons_other_tokens_stay_good(
    backend: Backend,
) -> None:
    tab, other_tab = backend.client().login(*ALICE), backend.client().login(*ALICE)
    session_id = tab.create_session()
    answer = tab.post("/api/logout")
    assert answer.status_code == 204
    assert "gui_agent_token=" in answer.headers["set-cookie"]  # the login cookie removed
    refused = tab.get("/api/sessions")
    assert refused.status_code == 401
    assert refused.json()["error"]["message"] == (
        "the token was refused: it was signed out; log in again"
    )
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    assert tab.get(f"/api/sessions/{session_id}").status_code == 401
    listed = other_tab.get("/api/sessions").json()["sessions"]  # another tab: still signed in
    assert [s["id"] for s in listed] == [session_id]
    assert tab.login(*ALICE).get("/api/sessions").status_code == 200  # signing in again


def test_a_logout_without_a_good_token_is_204_and_signs_nothing_out(backend: Backend) -> None:
    api = backend.client().login(*ALICE)
    with httpx.Client(base_url=backend.base_url) as http:
        assert http.post("/api/logout").status_code == 204
        bad = {"Authorization": "Bearer not-a-token"}
        assert http.post("/api/logout", headers=bad).status_code == 204
    assert api.get("/api/sessions").status_code == 200


def test_the_login_cookie_signs_its_token_out_and_an_open_stream_of_it_ends(
    backend: Backend,
) -> None:
    api = backend.client().login(*ALICE)
    session_id = api.create_session()
    with httpx.Client(base_url=backend.base_url, timeout=20) as browser:
        login = browser.post("/api/login", json={"username": ALICE[0], "password": ALICE[1]})
        token = login.json()["token"]
        with browser.stream("GET", f"/api/sessions/{session_id}/events") as stream:
            assert stream.status_code == 200  # opened with the login cookie
            assert browser.post("/api/logout").status_code == 204  # the cookie, no header
            ended = [line for line in stream.iter_lines() if line.startswith("event:")]
        assert ended[-1] == "event: closed"  # at its next check of the token
    refused = httpx.get(
        f"{backend.base_url}/api/sessions", headers={"Authorization": f"Bearer {token}"}
    )
    assert refused.status_code == 401
    assert api.get("/api/sessions").status_code == 200


def test_the_python_clients_log_out(backend: Backend) -> None:
    with GuiAgentClient(backend.base_url) as client:
        client.login(*ALICE)
        token = client.token
        client.logout()
        assert client.token is None
        client.logout()  # without a token: nothing to send

    async def async_client() -> str | None:
        async with AsyncGuiAgentClient(backend.base_url) as client:
            await client.login(*ALICE)
            kept = client.token
            await client.logout()
            assert client.token is None
            return kept

    for signed_out in (token, asyncio.run(async_client())):
        with (
            GuiAgentClient(backend.base_url, token=signed_out) as client,
            pytest.raises(Unauthorized, match="signed out"),
        ):
            client.list_sessions()


def test_sign_outs_are_kept_in_a_private_file_until_their_tokens_expire(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    now = [1_000.0]
    path = tmp_path / "data" / REVOKED_FILE_NAME
    revoked = RevokedTokens.load(path, clock=lambda: now[0])
    assert "a" not in revoked and len(revoked) == 0 and not path.exists()
    revoked.revoke("a", 1_100.0)
    revoked.revoke("b", 2_000.0)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert json.loads(path.read_text()) == {"a": 1_100.0, "b": 2_000.0}  # ids and times only
    again = RevokedTokens.load(path, clock=lambda: now[0])  # a restart
    assert "a" in again and "b" in again and "c" not in again
    now[0] = 1_500.0  # "a" would have expired by now: nothing to keep
    assert "a" not in again and "b" in again
    again.revoke("c", 3_000.0)
    assert json.loads(path.read_text()) == {"b": 2_000.0, "c": 3_000.0}
    with pytest.raises(ValueError, match="token id"):
        again.revoke("", 3_000.0)
    path.write_text("{half")  # a damaged file: logged, and the server starts
    damaged = RevokedTokens.load(path, clock=lambda: now[0])
    assert len(damaged) == 0
    assert "cannot read the signed-out tokens" in caplog.text
