"""Login: the users file, the trusted-proxy header, and refusing to serve openly without login."""

from __future__ import annotations

import json
import logging
import stat
from pathlib import Path

import pytest

from gui_agent.auth import ProxyHeaderAuth, UserDB, check_bind_safety, is_loopback
from gui_agent.exceptions import AuthError, ConfigError, InvalidRequest

PASSWORD = "correct horse battery"


@pytest.fixture
def users(tmp_path: Path) -> UserDB:
    return UserDB(tmp_path / "auth" / "users.json")


def test_added_user_logs_in_with_their_password_only(users: UserDB) -> None:
    users.add("alice", PASSWORD)

    assert users.verify("alice", PASSWORD) is True
    assert users.verify("alice", PASSWORD.upper()) is False
    assert users.verify("alice", "") is False
    assert users.verify("mallory", PASSWORD) is False
    assert users.names() == ["alice"]


def test_users_file_is_private_and_never_holds_the_password(users: UserDB) -> None:
    users.add("alice", PASSWORD)
    users.add("bob", PASSWORD)

    assert stat.S_IMODE(users.path.stat().st_mode) == 0o600
    text = users.path.read_text()
    assert PASSWORD not in text
    entries = json.loads(text)
    assert set(entries) == {"alice", "bob"}
    alice, bob = entries["alice"], entries["bob"]
    assert alice["password_hash"].startswith("scrypt$n=16384,r=8,p=1$")
    assert alice["password_hash"] != bob["password_hash"]  # a salt per user
    assert alice["created_at"]
    assert [p.name for p in users.path.parent.iterdir()] == sorted(
        ["users.json", "users.json.lock"]
    )  # no temp files left behind


@pytest.mark.parametrize("name", ["", "a b", "alice/..", "../etc", "x" * 65, "émile", "a\nb"])
def test_invalid_names_are_refused(users: UserDB, name: str) -> None:
    with pytest.raises(InvalidRequest, match="invalid user name"):
        users.add(name, PASSWORD)


def test_short_passwords_and_taken_names_are_refused(users: UserDB) -> None:
    with pytest.raises(InvalidRequest, match="at least 8"):
        users.add("alice", "1234567")
    users.add("alice", PASSWORD)
    with pytest.raises(InvalidRequest, match="already exists"):
        users.add("alice", "another password")
    assert users.verify("alice", PASSWORD)


def test_replacing_a_password_and_removing_a_user(users: UserDB) -> None:
    users.add("alice", PASSWORD)
    users.add("alice", "a new password", replace=True)
    assert not users.verify("alice", PASSWORD)
    assert users.verify("alice", "a new password")

    assert users.remove("alice") is True
    assert users.remove("alice") is False
    assert not users.verify("alice", "a new password")
    assert users.names() == []


def test_a_missing_file_means_no_users(users: UserDB) -> None:
    assert users.names() == []
    assert users.verify("alice", PASSWORD) is False


def test_a_users_file_others_can_read_is_refused(users: UserDB) -> None:
    users.add("alice", PASSWORD)
    users.path.chmod(0o644)
    with pytest.raises(AuthError, match=f"chmod 600 {users.path}"):
        users.verify("alice", PASSWORD)


def test_a_tampered_hash_never_matches(users: UserDB) -> None:
    users.add("alice", PASSWORD)
    data = json.loads(users.path.read_text())
    data["alice"]["password_hash"] = PASSWORD  # "plain text" in the file
    users.path.write_text(json.dumps(data))
    assert users.verify("alice", PASSWORD) is False


async def test_verify_async_answers_like_verify(users: UserDB) -> None:
    users.add("alice", PASSWORD)
    assert await users.verify_async("alice", PASSWORD) is True
    assert await users.verify_async("alice", "wrong password") is False


def test_proxy_header_counts_only_when_trusted() -> None:
    headers = {"x-forwarded-user": "alice", "Host": "example.org"}
    assert ProxyHeaderAuth(trusted=False).user_from(headers) is None
    assert ProxyHeaderAuth(trusted=True).user_from(headers) == "alice"
    assert ProxyHeaderAuth(trusted=True, header="Remote-User").user_from(headers) is None
    assert ProxyHeaderAuth(trusted=True).user_from({}) is None
    with pytest.raises(AuthError, match="not hold a valid user name"):
        ProxyHeaderAuth(trusted=True).user_from({"X-Forwarded-User": "../../root"})


@pytest.mark.parametrize(
    "host", ["127.0.0.1", "127.9.8.7", "localhost", "LOCALHOST", "::1", "[::1]", "::ffff:127.0.0.1"]
)
def test_loopback_needs_no_login(host: str) -> None:
    assert is_loopback(host)
    check_bind_safety(host, login_configured=False, insecure_no_auth=False)


@pytest.mark.parametrize(
    "host", ["0.0.0.0", "::", "", "192.168.1.20", "10.0.0.1", "example.org", "localhost.evil.com"]
)
def test_open_addresses_refuse_to_start_without_login(host: str) -> None:
    assert not is_loopback(host)
    with pytest.raises(ConfigError) as refused:
        check_bind_safety(host, login_configured=False, insecure_no_auth=False)
    message = str(refused.value)
    assert "gui-agent users add NAME" in message
    assert "--auth-file FILE" in message
    assert "--insecure-no-auth" in message

    check_bind_safety(host, login_configured=True, insecure_no_auth=False)


def test_a_name_that_differs_only_in_case_is_refused(tmp_path: Path) -> None:
    users = UserDB(tmp_path / "users.json")
    users.add("alice", "alice-password-1")
    for name, replace in (("Alice", False), ("ALICE", True)):
        with pytest.raises(InvalidRequest, match="'alice' already exists, a name that differs"):
            users.add(name, "other-password-2", replace=replace)
    assert users.names() == ["alice"]
    users.add("alice", "alice-password-3", replace=True)  # (the same name: a new password)
    assert users.names() == ["alice"]


def test_the_refusal_names_the_users_file_and_says_when_it_is_there(tmp_path: Path) -> None:
    users_file = tmp_path / "users.json"
    with pytest.raises(ConfigError) as refused:
        check_bind_safety(
            "0.0.0.0", login_configured=False, insecure_no_auth=False, users_file=users_file
        )
    assert f"gui-agent serve --host 0.0.0.0 --auth-file {users_file}\n" in str(refused.value)
    assert "gui-agent users add NAME" in str(refused.value)
    UserDB(users_file).add("alice", "alice-password-1")
    with pytest.raises(ConfigError) as refused:
        check_bind_safety(
            "0.0.0.0", login_configured=False, insecure_no_auth=False, users_file=users_file
        )
    assert f"A users file is already at {users_file}: serve with it" in str(refused.value)
    assert "users add" not in str(refused.value)


def test_insecure_no_auth_starts_but_warns(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="gui_agent.auth.users"):
        check_bind_safety("0.0.0.0", login_configured=False, insecure_no_auth=True)
    assert "without login" in caplog.text


def test_public_surface_is_exact() -> None:
    import gui_agent.auth

    assert set(gui_agent.auth.__all__) == {
        "Claims",
        "LoginThrottle",
        "ProxyHeaderAuth",
        "REVOKED_FILE_NAME",
        "RevokedTokens",
        "SECRET_ENV_VAR",
        "TokenService",
        "USERS_FILE_NAME",
        "USERS_WATCH_S",
        "UserDB",
        "UsersChange",
        "UsersWatcher",
        "check_bind_safety",
        "is_loopback",
        "load_or_create_signing_key",
    }
    assert all(hasattr(gui_agent.auth, name) for name in gui_agent.auth.__all__)
