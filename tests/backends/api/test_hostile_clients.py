"""A careless or hostile client gets a clear JSON error with the right status, never a 500
or a page, and the session it aimed at stays usable with nothing said lost."""

from __future__ import annotations

import pytest

from tests.backends.api.live import Api, is_idle

SCRIPTED_REPLY = "Hello from the scripted model."


def error_of(status: int, response: object) -> dict[str, str]:
    import httpx

    assert isinstance(response, httpx.Response)
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    error: dict[str, str] = response.json()["error"]
    return error


@pytest.mark.parametrize("offset", ["1000000001", "9" * 25])
def test_a_huge_list_offset_is_400_not_a_server_error(api: Api, offset: str) -> None:
    api.create_session(title="mine")
    error = error_of(400, api.get("/api/sessions", params={"offset": offset}))
    assert error["code"] == "invalid_request" and "offset" in error["message"]
    last = api.get("/api/sessions", params={"offset": "1000000000"})
    assert last.status_code == 200 and last.json()["sessions"] == []


@pytest.mark.parametrize(
    "content_type",
    ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"],
)
def test_a_body_that_is_not_declared_json_is_415_and_nothing_is_said(
    api: Api, content_type: str
) -> None:
    session_id = api.create_session()
    body = b'{"text": "sent as the wrong type"}'
    url = f"/api/sessions/{session_id}/messages"
    error = error_of(415, api.post(url, content=body, headers={"Content-Type": content_type}))
    assert error["code"] == "unsupported_media_type"
    assert "application/json" in error["message"]
    for path in ("/api/sessions", "/api/sessions/import"):
        refused = api.post(path, content=b"{}", headers={"Content-Type": content_type})
        assert error_of(415, refused)["code"] == "unsupported_media_type", path
    assert api.messages(session_id) == []  # nothing was taken from the refused body
    assert api.session(session_id)["state"] == "INIT"

    # The session is usable, by JSON with or without parameters, or no Content-Type at all.
    for headers in (
        {"Content-Type": "application/json; charset=utf-8"},
        {"Content-Type": "application/merge-patch+json"},
        {},
    ):
        with api.events(session_id) as stream:
            assert api.post(url, content=body, headers=headers).status_code == 202
            assert is_idle(stream.until(is_idle)[-1])
    assert [m.content for m in api.messages(session_id)][-2:] == [
        "sent as the wrong type",
        SCRIPTED_REPLY,
    ]
