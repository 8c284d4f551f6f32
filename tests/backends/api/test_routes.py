"""Routes over real HTTP: partial PATCH, event seq numbers, wrong methods and paths, tokens
whose times are out of range."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from jose import jwt
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from tests.backends.api.live import SECRET, Api, Backend, is_idle, iter_sse, running_backend


def error_of(response: object) -> dict[str, str]:
    body = response.json()  # type: ignore[attr-defined]
    assert set(body) == {"error"}, body
    return body["error"]  # type: ignore[no-any-return]


# -- PATCH is a partial update ------------------------------------------------------------


def test_patch_changes_only_the_settings_it_is_sent(api: Api) -> None:
    session_id = api.create_session(
        settings={
            "system_prompt": "You are a pirate.",
            "permissions": {"run_python": "deny"},
            "temperature": 0.2,
        }
    )
    url = f"/api/sessions/{session_id}"

    def settings() -> dict[str, object]:
        value: dict[str, object] = api.session(session_id)["session"]["settings"]
        return value

    before = settings()
    response = api.request("PATCH", url, json={"settings": {"temperature": 0.9}})
    assert response.status_code == 200, response.text
    assert response.json()["session"]["settings"] == {**before, "temperature": 0.9}
    assert settings() == {**before, "temperature": 0.9}

    api.request("PATCH", url, json={"autochat": {"max_turns": 7, "continuation_prompt": "go"}})
    autochat = api.request("PATCH", url, json={"autochat": {"delay_s": 1}}).json()["session"]
    assert autochat["autochat"]["max_turns"] == 7
    assert autochat["autochat"]["continuation_prompt"] == "go"
    assert autochat["autochat"]["delay_s"] == 1.0

    # A permissions map is one field: sent, it replaces the old one.
    api.request("PATCH", url, json={"settings": {"permissions": {"write_file": "ask"}}})
    assert settings()["permissions"] == {"write_file": "ask"}
    assert settings()["system_prompt"] == "You are a pirate."


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ({"settings": {"temperatur": 1}}, "settings: unknown field(s) temperatur"),
        ({"settings": {"temperature": 5}}, "settings.temperature"),
        ({"autochat": {"turns": 2}}, "autochat: unknown field(s) turns"),
        ({"autochat": {"max_turns": 0}}, "autochat.max_turns"),
        ({"model": "scripted", "settings": {"model": "slow"}}, "different models"),
    ],
    ids=["unknown-setting", "bad-setting", "unknown-autochat", "bad-autochat", "two-models"],
)
def test_a_bad_patch_is_refused_and_changes_nothing(
    api: Api, body: dict[str, object], reason: str
) -> None:
    session_id = api.create_session(settings={"system_prompt": "Keep me."})
    before = api.session(session_id)["session"]
    response = api.request("PATCH", f"/api/sessions/{session_id}", json=body)
    assert response.status_code == 400 and reason in error_of(response)["message"]
    assert api.session(session_id)["session"] == before


def test_creating_a_session_refuses_unknown_settings(api: Api) -> None:
    response = api.post("/api/sessions", json={"settings": {"temprature": 0.5}})
    assert response.status_code == 400 and "temprature" in error_of(response)["message"]
    assert api.get("/api/sessions").json()["sessions"] == []


# -- event seq numbers --------------------------------------------------------------------


def test_since_and_last_event_id_take_only_ascii_digits(api: Api) -> None:
    session_id = api.create_session()
    with api.events(session_id) as stream:
        api.send(session_id, "hi")
        last = stream.until(is_idle)[-1].seq
    url = f"/api/sessions/{session_id}/events"

    for since in ("²", "٣", "١٢٣", "-1", "1e3", "1" * 31):
        response = api.get(url, params={"since": since})
        assert response.status_code == 400, since
        assert error_of(response)["code"] == "invalid_request"
    superscript = api.get(url, headers={"Last-Event-ID": "²".encode("latin-1")})
    assert superscript.status_code == 400 and error_of(superscript)["code"] == "invalid_request"

    headers = {**api.headers, "Accept": "text/event-stream"}
    for since, replayed in (("0" * 19 + "1", last - 1), ("9" * 30, 0)):
        with api.http.stream("GET", url, params={"since": since}, headers=headers) as response:
            assert response.status_code == 200, since
            hello = next(iter_sse(response))
            assert hello.event == "hello"
            assert json.loads(hello.data)["replayed"] == replayed


# -- methods and paths --------------------------------------------------------------------


async def _page_not_found(request: Request) -> JSONResponse:
    return JSONResponse({"detail": "Not Found"}, status_code=404)


PAGE = Starlette(routes=[Route("/{path:path}", _page_not_found, methods=["GET", "POST"])])
"""Stands in for the Gradio page, which the server mounts at "/" after the API."""


@pytest.fixture
def with_page(tmp_path: Path) -> Iterator[Api]:
    with running_backend(tmp_path, page=PAGE) as backend:
        yield backend.client().login()


@pytest.mark.parametrize(
    ("method", "path", "allow"),
    [
        ("GET", "/api/login", "POST"),
        ("POST", "/api/health", "GET"),
        ("TRACE", "/api/health", "GET"),
        ("PATCH", "/api/sessions", "GET, POST"),
        ("PUT", "/api/sessions/{id}", "DELETE, GET, PATCH"),
        ("OPTIONS", "/api/sessions/{id}", "DELETE, GET, PATCH"),
        ("GET", "/api/sessions/{id}/messages", "POST"),
    ],
)
def test_a_wrong_method_is_405_naming_the_allowed_ones(
    with_page: Api, method: str, path: str, allow: str
) -> None:
    api = with_page
    url = path.replace("{id}", api.create_session())
    response = api.request(method, url)
    assert response.status_code == 405
    assert response.headers["allow"] == allow
    error = error_of(response)
    assert error["code"] == "method_not_allowed" and allow in error["message"]


def test_head_on_an_api_path_is_405_without_a_body(with_page: Api) -> None:
    response = with_page.request("HEAD", "/api/health")
    assert response.status_code == 405 and response.headers["allow"] == "GET"
    assert response.content == b""


@pytest.mark.parametrize(
    ("method", "path"),
    [("GET", "/api"), ("GET", "/api/"), ("OPTIONS", "/api/nowhere"), ("TRACE", "/api/x/y")],
)
def test_unknown_api_paths_are_404_in_the_api_shape_not_the_pages(
    with_page: Api, method: str, path: str
) -> None:
    response = with_page.request(method, path)
    assert response.status_code == 404
    assert error_of(response)["code"] == "not_found"


# -- tokens -------------------------------------------------------------------------------


@pytest.mark.parametrize("claim", ["exp", "iat"])
@pytest.mark.parametrize("value", [1e12, 1e308, -1e12])
def test_a_signed_token_with_an_impossible_time_is_401(
    backend: Backend, claim: str, value: float
) -> None:
    claims: dict[str, object] = {
        "sub": "local",
        "iat": 1_750_000_000,
        "exp": 4_000_000_000,
        "iss": "gui-agent",
        "jti": "x",
        claim: value,
    }
    client = backend.client(jwt.encode(claims, SECRET, algorithm="HS256"))
    for method, url in (("GET", "/api/models"), ("POST", "/api/sessions")):
        response = client.request(method, url, json={})
        assert response.status_code == 401, response.text
        assert error_of(response)["code"] == "unauthorized"
        assert response.headers["www-authenticate"].startswith("Bearer")
