"""DNS rebinding: a page on another site that makes its own name resolve to 127.0.0.1 is
same-origin with the app in the browser, and could send a trusted proxy's user header
itself. With a proxy header (and with a users file when `allowed_hosts` is set) the server
answers only requests addressed to a loopback name or a listed one: real HTTP (and a raw
websocket handshake) to the app `gui-agent serve` builds, API and Gradio page alike."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from gui_agent.auth import UserDB
from gui_agent.config import AppConfig
from tests.backends.api.live import ServerThread, serving
from tests.backends.test_server_process import Servers

HEADER = "X-Forwarded-User"
LISTED = ("chat.example.com", "*.team.example.org")
ATTACKER = "attacker.example"


def _config(tmp_path: Path, **extra: Any) -> AppConfig:
    return AppConfig(models=("scripted:echo",), data_dir=tmp_path / "data", port=0, **extra)


@pytest.fixture
def behind_proxy(tmp_path: Path) -> Iterator[ServerThread]:
    with serving(_config(tmp_path, trusted_proxy_header=HEADER, allowed_hosts=LISTED)) as server:
        yield server


def _client(server: ServerThread | str, host: str) -> httpx.Client:
    """A client whose requests are addressed to `host` (as a browser at that name sends)."""
    base_url = server if isinstance(server, str) else server.base_url
    return httpx.Client(base_url=base_url, timeout=20, headers={"Host": host})


def _token(http: httpx.Client, user: str) -> str:
    login = http.post("/api/login", headers={HEADER: user})
    assert login.status_code == 200, login.text
    assert login.json()["user"] == user
    return str(login.json()["token"])


def _sessions(server: ServerThread, user: str) -> list[str]:
    with _client(server, "127.0.0.1") as http:
        headers = {HEADER: user, "Authorization": f"Bearer {_token(http, user)}"}
        listed = http.get("/api/sessions", headers=headers)
        assert listed.status_code == 200, listed.text
        return [item["title"] for item in listed.json()["sessions"]]


def _handshake(server: ServerThread, host: str) -> str:
    """A websocket upgrade request addressed to `host`; the answer's status line and body."""
    port = int(server.base_url.rsplit(":", 1)[1])
    request = (
        f"GET /ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
        f"{HEADER}: alice\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", port), timeout=20) as conn:
        conn.sendall(request.encode())
        answer = b""
        while chunk := conn.recv(65536):
            answer += chunk
    return answer.decode(errors="replace")


def test_a_rebinding_page_sending_the_proxy_header_is_refused_before_any_handler(
    behind_proxy: ServerThread,
) -> None:
    with _client(behind_proxy, "127.0.0.1") as http:  # alice's own token, for the worst case
        token = _token(http, "alice")
    as_alice = {HEADER: "alice", "Authorization": f"Bearer {token}"}
    for host in (ATTACKER, f"{ATTACKER}:7860", "chat.example.com.attacker.example"):
        with _client(behind_proxy, host) as http:
            login = http.post("/api/login", headers={HEADER: "mallory"})
            assert login.status_code == 421, (host, login.text)
            error = login.json()["error"]
            assert error["code"] == "misdirected_request"
            assert "GUI_AGENT_ALLOWED_HOSTS" in error["message"], error
            assert "token" not in login.json()
            planted = http.post("/api/sessions", json={"title": "planted"}, headers=as_alice)
            assert planted.status_code == 421, planted.text
            for path in ("/", "/gradio_api/info", "/gradio_api/config"):  # the page too
                page = http.get(path, headers={HEADER: "alice"})
                assert page.status_code == 421, (path, page.text[:200])
                assert page.headers["content-type"].startswith("text/plain")
                assert "GUI_AGENT_ALLOWED_HOSTS" in page.text
                assert "gradio" not in page.text.lower()
    assert "planted" not in _sessions(behind_proxy, "alice")


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "localhost:8080",
        "LocalHost",
        "[::1]:7860",
        "chat.example.com",
        "CHAT.Example.COM:443",
        "chat.example.com.",
        "eu.team.example.org:8443",
        "a.b.TEAM.example.org",
    ],
)
def test_loopback_and_listed_names_are_served_whatever_the_port_and_case(
    behind_proxy: ServerThread, host: str
) -> None:
    with _client(behind_proxy, host) as http:
        token = _token(http, "alice")
        made = http.post(
            "/api/sessions",
            json={"title": f"via {host}"},
            headers={HEADER: "alice", "Authorization": f"Bearer {token}"},
        )
        assert made.status_code == 201, made.text
        page = http.get("/", headers={HEADER: "alice"})
        assert page.status_code == 200 and "text/html" in page.headers["content-type"]
    assert f"via {host}" in _sessions(behind_proxy, "alice")


@pytest.mark.parametrize(
    "host", ["team.example.org", "evilchat.example.com", "example.com", "chat.example.co"]
)
def test_names_near_a_listed_one_are_refused(behind_proxy: ServerThread, host: str) -> None:
    with _client(behind_proxy, host) as http:
        assert http.post("/api/login", headers={HEADER: "alice"}).status_code == 421


def test_a_websocket_handshake_to_another_name_is_refused(behind_proxy: ServerThread) -> None:
    refused = _handshake(behind_proxy, ATTACKER)
    assert refused.startswith("HTTP/1.1 421"), refused[:300]
    assert "GUI_AGENT_ALLOWED_HOSTS" in refused
    for host in ("127.0.0.1", "chat.example.com:443"):  # reaches the app (which has no /ws)
        served = _handshake(behind_proxy, host)
        assert served.startswith("HTTP/1.1 "), served[:300]
        assert not served.startswith("HTTP/1.1 421"), (host, served[:300])


def test_a_users_file_is_guarded_only_when_the_list_is_set(tmp_path: Path) -> None:
    users = UserDB(tmp_path / "users.json")
    users.add("alice", "alice-password-1")
    body = {"username": "alice", "password": "alice-password-1"}
    unlisted = _config(tmp_path, auth_file=users.path)
    with serving(unlisted) as server, _client(server, ATTACKER) as http:  # as before: no check
        assert http.post("/api/login", json=body).status_code == 200
    listed = _config(tmp_path, auth_file=users.path, allowed_hosts=("chat.example.com",))
    with serving(listed) as server:
        with _client(server, ATTACKER) as http:
            refused = http.post("/api/login", json=body)
            assert refused.status_code == 421, refused.text
            assert "GUI_AGENT_ALLOWED_HOSTS" in refused.json()["error"]["message"]
        for host in ("chat.example.com", "127.0.0.1"):
            with _client(server, host) as http:
                assert http.post("/api/login", json=body).status_code == 200, host


def test_without_login_a_listed_name_is_still_refused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="backends.api.guards")
    with serving(_config(tmp_path, allowed_hosts=("chat.example.com",))) as server:
        with _client(server, "chat.example.com") as http:
            refused = http.post("/api/login")
            assert refused.status_code == 421, refused.text
            assert "without login" in refused.json()["error"]["message"]
            assert http.get("/").status_code == 421
        with _client(server, "localhost") as http:
            assert http.post("/api/login").status_code == 200
    assert any(
        "GUI_AGENT_ALLOWED_HOSTS" in record.getMessage() and "ignored" in record.getMessage()
        for record in caplog.records
    ), caplog.text


def test_serve_takes_the_flag_and_logs_the_names_it_answers(tmp_path: Path) -> None:
    servers = Servers(tmp_path)
    try:
        server = servers.start(
            tmp_path / "data",
            "--trusted-proxy-header",
            HEADER,
            "--allowed-hosts",
            "Chat.Example.com,*.team.example.org",
        )
        started = [line for line in server.log().splitlines() if "answering only" in line]
        assert started, server.log()
        assert "localhost" in started[0] and "chat.example.com" in started[0]
        assert "*.team.example.org" in started[0] and HEADER in started[0]
        with _client(server.base_url, "chat.example.com:443") as http:
            assert http.post("/api/login", headers={HEADER: "alice"}).status_code == 200
        with _client(server.base_url, ATTACKER) as http:
            assert http.post("/api/login", headers={HEADER: "alice"}).status_code == 421
        assert server.stop() == 0
        bad = servers.run(tmp_path / "data", "--allowed-hosts", "https://chat.example.com")
        assert bad.returncode == 2, bad.stderr
        assert "allowed_hosts" in bad.stderr and "without http://" in bad.stderr
        assert "Traceback" not in bad.stderr
    finally:
        servers.cleanup()
