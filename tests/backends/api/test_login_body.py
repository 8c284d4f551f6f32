"""`POST /api/login` on a server without login still reads its body: a body that is not a
login's (not JSON, not an object, a field of the wrong type) is refused with the 400 every
endpoint answers a bad body with, while no body, `{}` or a login's fields get the token for
"local" as before. (The body was ignored: a client's broken request read as fine.)
Real server, real HTTP."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from gui_agent.auth import ProxyHeaderAuth
from tests.backends.api.live import Backend, running_backend


def error_of(response: Any) -> dict[str, str]:
    body = response.json()
    assert set(body) == {"error"}, body
    error: dict[str, str] = body["error"]
    return error


@pytest.mark.parametrize(
    ("content", "code", "words"),
    [
        (b"{not json", "invalid_json", "the request body is not valid JSON: "),
        (b'["alice", "secret"]', "invalid_json", "the request body must be a JSON object"),
        (b'"alice"', "invalid_json", "the request body must be a JSON object"),
        (b'{"username": 5}', "invalid_request", "username"),
        (b'{"username": "alice", "password": ["secret"]}', "invalid_request", "password"),
        (b'{"user": "alice"}', "invalid_request", "user"),
    ],
)
def test_a_malformed_login_body_is_refused_on_a_server_without_login(
    backend: Backend, content: bytes, code: str, words: str
) -> None:
    http = backend.client().http
    response = http.post(
        "/api/login", content=content, headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert error["code"] == code, error
    assert words in error["message"], error
    assert "set-cookie" not in response.headers  # no token was issued


@pytest.mark.parametrize(
    "sent",
    [
        None,
        b"",
        b"{}",
        b'{"username": "alice", "password": "secret"}',
        b'{"username": "", "password": ""}',
    ],
)
def test_an_empty_or_well_formed_login_body_still_gets_the_local_token(
    backend: Backend, sent: bytes | None
) -> None:
    http = backend.client().http
    if sent is None:
        response = http.post("/api/login")
    else:
        response = http.post(
            "/api/login", content=sent, headers={"Content-Type": "application/json"}
        )
    assert response.status_code == 200, response.text
    assert response.json()["user"] == "local"
    assert backend.tokens.verify(response.json()["token"]).subject == "local"


def test_a_login_the_proxy_names_the_user_of_reads_its_body_too(tmp_path: Path) -> None:
    """Behind a trusted proxy no password is checked either: the same body is refused."""
    proxy = ProxyHeaderAuth(trusted=True, header="X-Forwarded-User")
    with running_backend(tmp_path, proxy=proxy) as backend:
        http = backend.client().http
        named = {"X-Forwarded-User": "alice", "Content-Type": "application/json"}
        broken = http.post("/api/login", content=b"{not json", headers=named)
        assert broken.status_code == 400, broken.text
        assert error_of(broken)["code"] == "invalid_json"
        fine = http.post("/api/login", content=b"{}", headers=named)
        assert fine.status_code == 200, fine.text
        assert fine.json()["user"] == "alice"
