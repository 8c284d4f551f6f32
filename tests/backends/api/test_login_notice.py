"""A login sent a user name and password that the server does not check (it has no login,
or its proxy names the user) still gets its token, and its answer says they were not
checked (`notice`), so a caller who typed them is not left believing they were. A login
sent none has no notice; clients that ignore the field read the answer as before."""

from __future__ import annotations

from pathlib import Path

from backends.api.client import GuiAgentClient
from gui_agent.auth import ProxyHeaderAuth
from tests.backends.api.live import Backend, running_backend

UNCHECKED = (
    "this server has no login: the user name and password sent were not checked, and the "
    "token is for 'local', as everyone's is here"
)


def test_credentials_a_server_without_login_ignores_are_said_to_be_ignored(
    backend: Backend,
) -> None:
    http = backend.client().http
    typed = http.post("/api/login", json={"username": "alice", "password": "secret"})
    assert typed.status_code == 200, typed.text
    assert typed.json()["user"] == "local" and typed.json()["notice"] == UNCHECKED
    plain = http.post("/api/login")
    assert plain.status_code == 200 and plain.json()["notice"] is None

    with GuiAgentClient(backend.base_url) as client:
        assert client.login("alice", "secret").notice == UNCHECKED
        assert client.login().notice is None


def test_credentials_behind_a_proxy_are_said_to_be_ignored(tmp_path: Path) -> None:
    proxy = ProxyHeaderAuth(trusted=True, header="X-Forwarded-User")
    with running_backend(tmp_path, proxy=proxy) as backend:
        named = {"X-Forwarded-User": "alice"}
        typed = backend.client().http.post(
            "/api/login", json={"username": "bob", "password": "x"}, headers=named
        )
        assert typed.status_code == 200, typed.text
        assert typed.json()["user"] == "alice"
        assert typed.json()["notice"] == (
            "this server signs people in through its proxy, as 'alice': the user name and "
            "password sent were not checked"
        )
