"""One user can never see or touch another user's session, and no request gets in without
a valid token. Real server, real HTTP, a users file with two people."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from jose import jwt

from connectors.scripted import call
from gui_agent.auth import ProxyHeaderAuth, TokenService
from schema import ApprovalRequested
from tests.backends.api.live import SECRET, Api, Backend, running_backend

ALICE = ("alice", "alice-password-1")
BOB = ("bob", "bob-password-22")

# Every endpoint that takes a session id: (method, path, JSON body or None).
SESSION_ENDPOINTS: list[tuple[str, str, Any]] = [
    ("GET", "/api/sessions/{sid}", None),
    ("PATCH", "/api/sessions/{sid}", {"title": "taken over"}),
    ("DELETE", "/api/sessions/{sid}", None),
    ("POST", "/api/sessions/{sid}/messages", {"text": "hello from bob"}),
    ("POST", "/api/sessions/{sid}/stop", None),
    ("POST", "/api/sessions/{sid}/approvals/{aid}", {"decision": "allow_once"}),
    ("POST", "/api/sessions/{sid}/control", {"action": "clear"}),
    ("POST", "/api/sessions/{sid}/control", {"action": "retry"}),
    ("POST", "/api/sessions/{sid}/control", {"action": "edit_last", "text": "x"}),
    ("GET", "/api/sessions/{sid}/events", None),
    ("GET", "/api/sessions/{sid}/export", None),
]

# Every endpoint: each must refuse a request without a valid token.
ALL_ENDPOINTS: list[tuple[str, str, Any]] = [
    ("GET", "/api/models", None),
    ("GET", "/api/agents", None),
    ("GET", "/api/sessions", None),
    ("POST", "/api/sessions", {}),
    ("POST", "/api/sessions/import", {"format": "gui-agent-session"}),
    *SESSION_ENDPOINTS,
]


@dataclass
class TwoUsers:
    backend: Backend
    alice: Api
    bob: Api
    session_id: str
    approval_id: str


@pytest.fixture
def two_users(tmp_path: Path) -> Iterator[TwoUsers]:
    """Alice has a session waiting for her approval of a run_python call."""
    with running_backend(tmp_path, users=[ALICE, BOB]) as backend:
        alice = backend.client().login(*ALICE)
        bob = backend.client().login(*BOB)
        backend.scripted.push(call("run_python", code="print(6*7)"), "Done.")
        session_id = alice.create_session(title="Alice's secret plan")
        with alice.events(session_id) as stream:
            alice.send(session_id, "run the numbers")
            request = stream.until(lambda e: isinstance(e, ApprovalRequested))[-1]
        assert isinstance(request, ApprovalRequested)
        yield TwoUsers(backend, alice, bob, session_id, request.approval_id)
        alice.post(
            f"/api/sessions/{session_id}/approvals/{request.approval_id}",
            json={"decision": "deny"},
        )


def _call(api: Api, method: str, path: str, body: Any, **ids: str) -> Any:
    url = path.format(**ids)
    if method == "GET" and url.endswith("/events"):
        with api.http.stream("GET", url, headers=api.headers) as response:
            return response.status_code, json.loads(response.read())
    response = api.request(method, url, json=body)
    return response.status_code, response.json() if response.content else None


@pytest.mark.parametrize(
    ("method", "path", "body"),
    SESSION_ENDPOINTS,
    ids=[f"{m} {p} {json.dumps(b)}" for m, p, b in SESSION_ENDPOINTS],
)
def test_another_users_session_is_not_found_and_stays_unchanged(
    two_users: TwoUsers, method: str, path: str, body: Any
) -> None:
    alice, bob, sid = two_users.alice, two_users.bob, two_users.session_id
    before = alice.session(sid)
    assert before["state"] == "WAITING" and len(before["pending_approvals"]) == 1

    status, error = _call(bob, method, path, body, sid=sid, aid=two_users.approval_id)
    assert status == 404
    assert error == {"error": {"code": "not_found", "message": "no such session"}}
    # The answer is the same as for an id that exists nowhere: nothing to probe.
    status, unknown = _call(bob, method, path, body, sid="0" * 32, aid="x")
    assert (status, unknown) == (404, error)

    after = alice.session(sid)
    assert after == before
    assert [s["id"] for s in alice.get("/api/sessions").json()["sessions"]] == [sid]


def test_session_lists_and_searches_show_only_your_own(two_users: TwoUsers) -> None:
    bob = two_users.bob
    assert bob.get("/api/sessions").json()["sessions"] == []
    assert bob.get("/api/sessions", params={"q": "secret"}).json()["sessions"] == []
    own = bob.create_session(title="Bob's notes")
    listed = bob.get("/api/sessions").json()["sessions"]
    assert [s["id"] for s in listed] == [own] and listed[0]["owner"] == "bob"
    alice_sessions = two_users.alice.get("/api/sessions").json()["sessions"]
    assert [s["id"] for s in alice_sessions] == [two_users.session_id]


def test_an_import_belongs_to_the_importer(two_users: TwoUsers) -> None:
    alice, bob = two_users.alice, two_users.bob
    document = alice.get(f"/api/sessions/{two_users.session_id}/export").json()
    assert document["session"]["owner"] == "alice"
    response = bob.post("/api/sessions/import", json=document)
    assert response.status_code == 201
    copy = response.json()["session"]
    assert copy["owner"] == "bob" and copy["id"] != two_users.session_id
    assert alice.get(f"/api/sessions/{copy['id']}").status_code == 404


# -- tokens ---------------------------------------------------------------------------------


def _b64(data: dict[str, Any]) -> str:
    raw = json.dumps(data, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _claims(subject: str) -> dict[str, Any]:
    now = int(time.time())
    return {"sub": subject, "iat": now, "exp": now + 3600, "iss": "gui-agent", "jti": "x"}


def forged_tokens() -> dict[str, str]:
    alg_none = _b64({"alg": "none", "typ": "JWT"}) + "." + _b64(_claims("alice")) + "."
    past = time.time() - 2 * 3600
    return {
        "wrong signature": TokenService("another-secret-" + "z" * 40).issue("alice"),
        "alg none": alg_none,
        "HS512 with our key": jwt.encode(_claims("alice"), SECRET, algorithm="HS512"),
        "expired": TokenService(SECRET, ttl_s=3600, clock=lambda: past).issue("alice"),
        "tampered subject": _tamper(TokenService(SECRET).issue("bob"), "alice"),
        "garbage": "not.a.token",
    }


def _tamper(token: str, subject: str) -> str:
    header, payload, signature = token.split(".")
    claims = json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))
    return f"{header}.{_b64({**claims, 'sub': subject})}.{signature}"


@pytest.mark.parametrize(
    ("method", "path", "body"), ALL_ENDPOINTS, ids=[f"{m} {p}" for m, p, _ in ALL_ENDPOINTS]
)
def test_every_endpoint_refuses_missing_and_forged_tokens(
    two_users: TwoUsers, method: str, path: str, body: Any
) -> None:
    alice = two_users.alice
    before = alice.session(two_users.session_id)
    ids = {"sid": two_users.session_id, "aid": two_users.approval_id}
    anonymous = two_users.backend.client()
    for label, token in {"no token": "", **forged_tokens()}.items():
        anonymous.token = token or None
        url = path.format(**ids)
        response = anonymous.request(method, url, json=body)
        assert response.status_code == 401, (label, response.text)
        assert response.headers["www-authenticate"].startswith("Bearer"), label
        assert response.json()["error"]["code"] == "unauthorized", label
    assert alice.session(two_users.session_id) == before


def test_only_a_bearer_authorization_header_counts(two_users: TwoUsers) -> None:
    http = two_users.backend.client().http
    token = two_users.alice.token
    for header in (f"Basic {token}", f"Bearer{token}", "Bearer", f"Token {token}"):
        response = http.get("/api/sessions", headers={"Authorization": header})
        assert response.status_code == 401, header


def test_login_refuses_wrong_passwords_and_unknown_users(two_users: TwoUsers) -> None:
    http = two_users.backend.client().http
    for username, password in [("alice", "wrong-password"), ("mallory", "alice-password-1")]:
        response = http.post("/api/login", json={"username": username, "password": password})
        assert response.status_code == 401
        assert response.json()["error"]["message"] == "wrong user name or password"
    assert http.post("/api/login").status_code == 400  # a password is required
    ok = http.post("/api/login", json={"username": "alice", "password": "alice-password-1"})
    assert ok.status_code == 200 and ok.json()["user"] == "alice"


def test_password_guessing_is_slowed_down_with_429_and_retry_after(two_users: TwoUsers) -> None:
    http = two_users.backend.client().http
    statuses = [
        http.post("/api/login", json={"username": "alice", "password": f"guess-{n}"}).status_code
        for n in range(7)
    ]
    assert statuses == [401] * 6 + [429]  # five failures are free; the sixth costs a wait
    refused = http.post("/api/login", json={"username": "alice", "password": "alice-password-1"})
    assert refused.status_code == 429  # even the right password waits: it is not checked
    assert refused.json()["error"]["code"] == "too_many_attempts"
    assert 1 <= int(refused.headers["Retry-After"]) <= 2
    other = http.post("/api/login", json={"username": "bob", "password": "bob-password-22"})
    assert other.status_code == 200  # another user from the same address is not locked out
    assert two_users.alice.get("/api/sessions").status_code == 200  # tokens keep working
    time.sleep(int(refused.headers["Retry-After"]) + 0.1)
    ok = http.post("/api/login", json={"username": "alice", "password": "alice-password-1"})
    assert ok.status_code == 200


def test_removing_a_user_revokes_their_tokens(two_users: TwoUsers) -> None:
    assert two_users.bob.get("/api/sessions").status_code == 200
    users = two_users.backend.users
    assert users is not None and users.remove("bob")
    response = two_users.bob.get("/api/sessions")
    assert response.status_code == 401
    assert "no longer exists" in response.json()["error"]["message"]


def test_a_removed_users_token_is_refused_by_every_endpoint(two_users: TwoUsers) -> None:
    bob, users = two_users.bob, two_users.backend.users
    assert users is not None
    own = bob.create_session(title="Bob's notes")
    assert users.remove("bob")
    for method, path, body in ALL_ENDPOINTS:
        status, answer = _call(bob, method, path, body, sid=own, aid="a1")
        assert status == 401, (method, path, answer)
        assert answer["error"]["code"] == "unauthorized", (method, path)
        assert "no longer exists" in answer["error"]["message"], (method, path)
    users.add(*BOB)  # back again: nothing was changed or deleted meanwhile
    refused = bob.get("/api/sessions")  # the old token was for the removed account
    assert refused.status_code == 401 and "password" in refused.json()["error"]["message"]
    bob.login(*BOB)
    assert bob.session(own)["session"]["title"] == "Bob's notes"
    assert [s["id"] for s in bob.get("/api/sessions").json()["sessions"]] == [own]


# -- a trusted proxy names the user ---------------------------------------------------------


def test_a_trusted_proxy_header_names_the_user_on_every_request(tmp_path: Path) -> None:
    proxy = ProxyHeaderAuth(trusted=True, header="X-Forwarded-User")
    with running_backend(tmp_path, proxy=proxy) as backend:
        http = backend.client().http
        assert http.post("/api/login").status_code == 401  # not through the proxy
        as_alice = {"X-Forwarded-User": "alice"}
        login = http.post("/api/login", headers=as_alice)
        assert login.status_code == 200 and login.json()["user"] == "alice"
        bearer = {"Authorization": f"Bearer {login.json()['token']}"}
        assert http.get("/api/sessions", headers={**bearer, **as_alice}).status_code == 200
        # The token alone is not enough, and it cannot be replayed as someone else.
        assert http.get("/api/sessions", headers=bearer).status_code == 401
        as_bob = {**bearer, "X-Forwarded-User": "bob"}
        assert http.get("/api/sessions", headers=as_bob).status_code == 401
        bad_name = http.post("/api/login", headers={"X-Forwarded-User": "../root"})
        assert bad_name.status_code == 401
