"""Request bodies over real HTTP: unknown fields refused, the page's image limits, a client
hanging up mid-body."""

from __future__ import annotations

import asyncio
import base64
import logging
import socket
from collections.abc import Iterator

import pytest

from backends.gradio.attach import add_images
from schema import ImagePart
from schema.requests import MAX_IMAGE_BYTES, MAX_IMAGES
from tests.backends.api.live import Api, Backend, is_idle

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
PIXEL = base64.b64encode(PNG).decode()


def error_of(response: object) -> dict[str, str]:
    body = response.json()  # type: ignore[attr-defined]
    assert set(body) == {"error"}, body
    return body["error"]  # type: ignore[no-any-return]


def image(data: bytes = PNG, media_type: str = "image/png") -> dict[str, str]:
    return {"media_type": media_type, "data": base64.b64encode(data).decode()}


# -- unknown fields -----------------------------------------------------------------------


def test_unknown_fields_in_message_control_and_approval_bodies_are_refused(api: Api) -> None:
    session_id = api.create_session()
    url = f"/api/sessions/{session_id}"
    cases = [
        (f"{url}/messages", {"text": "a", "zzz": 1}, "zzz"),
        (f"{url}/control", {"action": "retry", "force": True}, "force"),
        (f"{url}/approvals/a1", {"decision": "deny", "remember": True}, "remember"),
    ]
    for path, body, field in cases:
        response = api.post(path, json=body)
        assert response.status_code == 400, (path, response.text)
        error = error_of(response)
        assert error["code"] == "invalid_request" and field in error["message"]
    assert api.session(session_id)["messages"] == []


def test_text_and_images_go_only_with_edit_last(api: Api) -> None:
    session_id = api.create_session()
    url = f"/api/sessions/{session_id}/control"
    for body in (
        {"action": "retry", "text": "x"},
        {"action": "clear", "images": [image()]},
    ):
        response = api.post(url, json=body)
        assert response.status_code == 400 and "edit_last" in error_of(response)["message"]


def test_edit_last_sends_the_new_text_with_its_images(backend: Backend, api: Api) -> None:
    session_id = api.create_session()
    backend.scripted.push("first answer", "second answer")
    url = f"/api/sessions/{session_id}/control"
    with api.events(session_id) as stream:
        api.send(session_id, "question")
        stream.until(is_idle)
        svg = api.post(
            url,
            json={
                "action": "edit_last",
                "text": "x",
                "images": [image(media_type="image/svg+xml")],
            },
        )
        assert svg.status_code == 400 and "svg" in error_of(svg)["message"]
        edit = api.post(url, json={"action": "edit_last", "text": "look", "images": [image()]})
        assert edit.status_code == 202, edit.text
        stream.until(is_idle)
    first, reply = api.messages(session_id)
    assert first.content == "look" and first.images == (ImagePart(data=PIXEL),)
    assert reply.content == "second answer"


# -- images ---------------------------------------------------------------------------------


def test_the_api_takes_the_same_images_as_the_page(api: Api) -> None:
    session_id = api.create_session()
    url = f"/api/sessions/{session_id}/messages"

    kept, problems = add_images([], [PNG] * (MAX_IMAGES + 1))
    assert len(kept) == MAX_IMAGES and len(problems) == 1
    many = api.post(url, json={"text": "a", "images": [image()] * (MAX_IMAGES + 1)})
    assert many.status_code == 400
    assert f"at most {MAX_IMAGES} images" in error_of(many)["message"]

    svg = api.post(url, json={"text": "a", "images": [image(b"<svg/>", "image/svg+xml")]})
    assert svg.status_code == 400 and "image/svg+xml" in error_of(svg)["message"]

    big = PNG + b"\x00" * (MAX_IMAGE_BYTES + 1 - len(PNG))
    too_big = api.post(url, json={"text": "a", "images": [image(big)]})
    assert too_big.status_code == 413 and error_of(too_big)["code"] == "too_large"
    assert f"{MAX_IMAGE_BYTES:,}" in error_of(too_big)["message"]
    assert api.session(session_id)["messages"] == []

    largest = PNG + b"\x00" * (MAX_IMAGE_BYTES - len(PNG))
    images = [image(largest), *[image()] * (MAX_IMAGES - 1)]
    accepted = api.post(url, json={"text": "a", "images": images})
    assert accepted.status_code == 202, accepted.text[:300]
    assert len(api.messages(session_id)[0].images) == MAX_IMAGES


def test_image_bytes_must_be_an_image_of_the_declared_type(api: Api) -> None:
    session_id = api.create_session()
    url = f"/api/sessions/{session_id}"
    jpeg = b"\xff\xd8\xff\xe0" + b"\x00" * 16
    cases = [
        (image(b"<script>alert(1)</script>"), "images.0: the data is not a PNG, JPEG, GIF"),
        (image(jpeg), "images.0: the data is image/jpeg, not image/png as declared"),
        ({"media_type": "image/png", "data": "not base64!"}, "images.0: data must be base64"),
        ({"media_type": "image/png", "data": "iVBORw0KGgo"}, "images.0: data must be base64"),
        ({"media_type": "image/png", "data": ""}, "images.0: the data is not a PNG"),
    ]
    for bad, reason in cases:
        for path, body in (
            (f"{url}/messages", {"text": "a", "images": [bad]}),
            (f"{url}/control", {"action": "edit_last", "text": "a", "images": [bad]}),
        ):
            response = api.post(path, json=body)
            assert response.status_code == 400, (reason, response.text)
            error = error_of(response)
            assert error["code"] == "invalid_request" and reason in error["message"], error
    assert api.session(session_id)["messages"] == []
    # What the page's attach button makes of the same bytes, the API takes.
    (attached,), _ = add_images([], [jpeg])
    assert attached.media_type == "image/jpeg"
    sent = api.post(f"{url}/messages", json={"text": "a", "images": [image(jpeg, "image/jpeg")]})
    assert sent.status_code == 202, sent.text


# -- a client that hangs up -----------------------------------------------------------------


class _Records(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def server_errors() -> Iterator[_Records]:
    """What uvicorn logs about failed requests (it does not propagate to the root logger)."""
    handler = _Records()
    logger = logging.getLogger("uvicorn.error")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


async def _requests_in_flight(*, want: bool) -> bool:
    """Whether uvicorn is serving a request, polled (bounded) until it is `want`."""
    for _ in range(500):
        running = any(
            task.get_coro().__qualname__.endswith("run_asgi") for task in asyncio.all_tasks()
        )
        if running == want:
            return running
        await asyncio.sleep(0.01)
    return not want


def test_a_client_hanging_up_mid_body_is_not_a_server_error(
    backend: Backend, api: Api, server_errors: _Records, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="backends.api.bodies")
    session_id = api.create_session()
    host, port = backend.base_url.removeprefix("http://").split(":")
    head = (
        f"POST /api/sessions/{session_id}/messages HTTP/1.1\r\nHost: {host}\r\n"
        f"Authorization: Bearer {api.token}\r\nContent-Type: application/json\r\n"
        "Content-Length: 100\r\n\r\n"
    )
    with socket.create_connection((host, int(port))) as client:
        client.sendall(head.encode() + b'{"text":')
        assert backend.server.call(_requests_in_flight(want=True))
    assert not backend.server.call(_requests_in_flight(want=False))

    assert [r.getMessage() for r in server_errors.records if r.levelno >= logging.ERROR] == []
    assert any("hung up" in r.getMessage() for r in caplog.records)
    assert api.session(session_id)["messages"] == []
