"""`--trusted-proxy-header` takes the user from a header that anyone can send: the real
`gui-agent serve` refuses it on an address others can reach directly, says why and what to
do, and with `--insecure-no-auth` (only the proxy can reach the port) starts with a warning
that names the risk. On loopback, behind a proxy on the same machine, it starts quietly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from gui_agent.auth import UserDB
from tests.backends.test_server_process import Servers

HEADER = "X-Forwarded-User"


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    running = Servers(tmp_path)
    try:
        yield running
    finally:
        running.cleanup()


def test_a_proxy_header_on_a_public_address_is_refused_with_why_and_how(
    servers: Servers, tmp_path: Path
) -> None:
    users = UserDB(tmp_path / "users.json")
    users.add("alice", "alice-password-1")
    for extra in ((), ("--auth-file", str(users.path))):  # a users file does not help
        refused = servers.run(
            tmp_path / "data", "--trusted-proxy-header", HEADER, *extra, host="0.0.0.0"
        )
        assert refused.returncode == 2, (extra, refused.stderr)
        assert f"--trusted-proxy-header {HEADER}" in refused.stderr
        assert f"'{HEADER}: NAME' and be NAME" in refused.stderr  # the risk
        assert "--host 127.0.0.1" in refused.stderr and "firewall" in refused.stderr  # fixes
        assert "--insecure-no-auth" in refused.stderr
        assert "Traceback" not in refused.stderr
        assert not (tmp_path / "data").exists()  # refused before touching anything


def test_with_insecure_no_auth_it_starts_and_warns_of_the_forged_header(
    servers: Servers, tmp_path: Path
) -> None:
    server = servers.start(
        tmp_path / "data", "--trusted-proxy-header", HEADER, "--insecure-no-auth", host="0.0.0.0"
    )
    warnings = [line for line in server.log().splitlines() if "WARNING" in line]
    assert any(HEADER in line and "firewall" in line for line in warnings), server.log()
    # The risk it names is real: reaching the port directly, the header decides who you are.
    with httpx.Client(base_url=server.base_url, timeout=20) as http:
        forged = http.post("/api/login", headers={HEADER: "anyone"})
        assert forged.status_code == 200 and forged.json()["user"] == "anyone"
    assert server.stop() == 0


def test_on_loopback_behind_a_local_proxy_it_starts_quietly(
    servers: Servers, tmp_path: Path
) -> None:
    server = servers.start(tmp_path / "data", "--trusted-proxy-header", HEADER)
    assert "WARNING" not in server.log(), server.log()
    with httpx.Client(base_url=server.base_url, timeout=20) as http:
        assert http.post("/api/login").status_code == 401  # not through the proxy
        login = http.post("/api/login", headers={HEADER: "alice"})
        assert login.status_code == 200 and login.json()["user"] == "alice"
    assert server.stop() == 0
