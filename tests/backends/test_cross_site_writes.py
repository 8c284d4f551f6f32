"""Requests that change something, sent as a browser sends them for a page on another
origin, are refused (403) before they reach the app; programs (no Origin header) and the
app's own page, also behind a reverse proxy, are served as before. Real HTTP to the server
`gui-agent serve` builds (`build_server`), without login and with a users file.
(The same, driven by a real browser from a second site: test_cross_site_pages.py.)"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from gradio.utils import get_upload_folder

from gui_agent.auth import UserDB
from gui_agent.config import AppConfig
from tests.backends.api.live import Api, ServerThread, serving

PASSWORD = "alice-password-1"
REFUSED = "a page at another address sent it"


@pytest.fixture
def local(tmp_path: Path) -> Iterator[ServerThread]:
    config = AppConfig(models=("scripted:echo",), data_dir=tmp_path / "data", port=0)
    with serving(config) as server:
        yield server


@pytest.fixture
def team(tmp_path: Path) -> Iterator[ServerThread]:
    users = UserDB(tmp_path / "users.json")
    users.add("alice", PASSWORD)
    config = AppConfig(
        models=("scripted:echo",), data_dir=tmp_path / "data", port=0, auth_file=users.path
    )
    with serving(config) as server:
        yield server


def _port(server: ServerThread) -> int:
    return int(server.base_url.rsplit(":", 1)[1])


def _titles(api: Api) -> list[str]:
    return sorted(item["title"] for item in api.get("/api/sessions").json()["sessions"])


def test_a_write_sent_from_another_origin_changes_nothing(local: ServerThread) -> None:
    api = Api(local.base_url).login()
    try:
        kept = api.create_session(title="kept")
        port = _port(local)
        foreign = {
            "another site": {"Origin": "https://evil.example"},
            "this host, another port": {"Origin": f"http://127.0.0.1:{port + 1}"},
            "localhost, another port": {"Origin": f"http://localhost:{port + 1}"},
            "this address over https": {"Origin": f"https://127.0.0.1:{port}"},
            "a sandboxed frame": {"Origin": "null"},
            "not an origin": {"Origin": "javascript:alert(1)"},
            "another site, no Origin": {"Sec-Fetch-Site": "cross-site"},
            "same site, no Origin": {"Sec-Fetch-Site": "same-site"},
            "another site with a matching Origin": {
                "Origin": f"http://127.0.0.1:{port}",
                "Sec-Fetch-Site": "cross-site",
            },
        }
        for why, headers in foreign.items():
            attempts = {
                "create": api.post("/api/sessions", json={"title": "made"}, headers=headers),
                "rename": api.request(
                    "PATCH", f"/api/sessions/{kept}", json={"title": "renamed"}, headers=headers
                ),
                "delete": api.request("DELETE", f"/api/sessions/{kept}", headers=headers),
                "send": api.post(
                    f"/api/sessions/{kept}/messages", json={"text": "hi"}, headers=headers
                ),
            }
            for action, answer in attempts.items():
                assert answer.status_code == 403, (why, action, answer.text)
                error = answer.json()["error"]
                assert error["code"] == "cross_site_request" and REFUSED in error["message"]
                assert "access-control-allow-origin" not in answer.headers
            upload_name = f"cross-site-{secrets.token_hex(6)}.txt"
            upload = api.http.post(
                "/gradio_api/upload",
                files={"files": (upload_name, b"planted", "text/plain")},
                headers=headers,
            )
            assert upload.status_code == 403 and REFUSED in upload.text, (why, upload.text)
            assert not list(Path(get_upload_folder()).glob(f"*/{upload_name}"))
        assert _titles(api) == ["kept"]
        assert api.messages(kept) == []
    finally:
        api.close()


def test_programs_and_the_apps_own_page_are_served(local: ServerThread) -> None:
    port = _port(local)
    api = Api(local.base_url).login()  # no Origin: a program, as ever
    try:
        made = api.create_session(title="from a program")
        assert api.request("DELETE", f"/api/sessions/{made}").status_code == 204
        own = {
            "the app's own page": {"Origin": f"http://127.0.0.1:{port}"},
            "named as localhost": {
                "Host": f"localhost:{port}",
                "Origin": f"http://localhost:{port}",
            },
            "the browser says same-origin": {"Sec-Fetch-Site": "same-origin"},
            "typed by the person": {"Sec-Fetch-Site": "none"},
        }
        for why, headers in own.items():
            created = api.post("/api/sessions", json={"title": why}, headers=headers)
            assert created.status_code == 201, (why, created.text)
        assert _titles(api) == sorted(own)
        # Reading needs no such check (no other site can read the answer: no CORS).
        read = api.get("/api/sessions", headers={"Origin": "https://evil.example"})
        assert read.status_code == 200
        assert "access-control-allow-origin" not in read.headers
    finally:
        api.close()


def test_behind_a_reverse_proxy_the_public_address_is_the_apps_own(team: ServerThread) -> None:
    """What nginx and Caddy send in front of the app: the browser's Origin is the public
    address, which the proxy passes as Host or as X-Forwarded-Host / Forwarded."""
    body = {"username": "alice", "password": PASSWORD}
    public = "https://chat.example.com"
    served = {
        "Caddy (Host kept)": {"Host": "chat.example.com", "X-Forwarded-Proto": "https"},
        "nginx with X-Forwarded-Host": {
            "X-Forwarded-Host": "chat.example.com",
            "X-Forwarded-Proto": "https",
        },
        "a list of hops": {
            "X-Forwarded-Host": "chat.example.com, inner.local",
            "X-Forwarded-Proto": "https, http",
        },
        "RFC 7239 Forwarded": {"Forwarded": 'for=192.0.2.1;host="chat.example.com";proto=https'},
        "the port rewritten, the browser says same-origin": {
            "Host": "chat.example.com",
            "Sec-Fetch-Site": "same-origin",
            "Origin": "https://chat.example.com:8443",
        },
    }
    with httpx.Client(base_url=team.base_url, timeout=20) as http:
        for why, headers in served.items():
            login = http.post("/api/login", json=body, headers={"Origin": public, **headers})
            assert login.status_code == 200, (why, login.text)
        refused = {
            "another site behind the same proxy": {
                "Origin": "https://evil.example",
                "X-Forwarded-Host": "chat.example.com",
                "X-Forwarded-Proto": "https",
            },
            "another port of the public host": {
                "Origin": "https://chat.example.com:8443",
                "Host": "chat.example.com",
                "X-Forwarded-Proto": "https",
            },
        }
        for why, headers in refused.items():
            login = http.post("/api/login", json=body, headers=headers)
            assert login.status_code == 403, (why, login.text)
            page_login = http.post("/login", data=body, headers=headers)
            assert page_login.status_code == 403, (why, page_login.text)
            assert REFUSED in page_login.text and "access-token" not in str(page_login.cookies)


def test_no_answer_may_be_shown_in_another_sites_frame(local: ServerThread) -> None:
    """The page, the API, and the refusals too, say no frame may show them."""
    with httpx.Client(base_url=local.base_url, timeout=20) as http:
        answers = {
            "the page": http.get("/"),
            "the page's config": http.get("/config"),
            "the API": http.get("/api/health"),
            "a refused write": http.post("/api/login", headers={"Origin": "https://evil.example"}),
            "another host name": http.get("/", headers={"Host": "evil.example"}),
        }
        for what, answer in answers.items():
            assert answer.headers.get("x-frame-options") == "DENY", (what, answer.headers)
            policies = answer.headers.get_list("content-security-policy")
            assert "frame-ancestors 'none'" in policies, (what, policies)
            # and images or media from elsewhere are never loaded (a reply's image address
            # could carry data out)
            assert "img-src 'self' data: blob:; media-src 'self' data: blob:" in policies
        assert answers["the page"].status_code == 200
        assert answers["a refused write"].status_code == 403
        assert answers["another host name"].status_code == 421
