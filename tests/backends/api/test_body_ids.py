"""An id in a body that contradicts the one in its path is refused (400, saying both), never
overridden: a client that built the URL from one chat or approval and the body from another
has a bug, and acting on either would hide it. The same id, or none, is fine."""

from __future__ import annotations

from typing import Any

from connectors.scripted import call
from schema import ApprovalRequested
from tests.backends.api.live import Api, Backend


def error_of(response: Any) -> dict[str, str]:
    body = response.json()
    assert set(body) == {"error"}, body
    return body["error"]  # type: ignore[no-any-return]


def test_a_message_naming_another_chat_in_its_body_is_refused(api: Api) -> None:
    session_id = api.create_session()
    url = f"/api/sessions/{session_id}"
    for path, body in (
        (f"{url}/messages", {"text": "hi", "session_id": "other"}),
        (f"{url}/control", {"action": "clear", "session_id": "other"}),
    ):
        refused = api.post(path, json=body)
        assert refused.status_code == 400, refused.text
        assert error_of(refused) == {
            "code": "invalid_request",
            "message": f"session_id: the body names 'other' but the path names "
            f"{session_id!r}; send the path's id in the body, or none",
        }
    assert api.session(session_id)["messages"] == []

    taken = api.post(f"{url}/messages", json={"text": "hi", "session_id": session_id})
    assert taken.status_code == 202, taken.text


def test_an_approval_naming_another_one_in_its_body_is_refused(backend: Backend, api: Api) -> None:
    backend.scripted.push(call("run_python", code="print(6*7)"), "done")
    session_id = api.create_session()
    with api.events(session_id) as stream:
        api.send(session_id, "run it")
        asked = stream.until(lambda event: isinstance(event, ApprovalRequested))[-1]
        assert isinstance(asked, ApprovalRequested)
        url = f"/api/sessions/{session_id}/approvals/{asked.approval_id}"

        refused = api.post(url, json={"decision": "allow_once", "approval_id": "other"})
        assert refused.status_code == 400, refused.text
        message = error_of(refused)["message"]
        assert message.startswith("approval_id: the body names 'other' but the path names")
        assert api.session(session_id)["pending_approvals"]  # still open: nothing approved

        taken = api.post(url, json={"decision": "deny", "approval_id": asked.approval_id})
        assert taken.status_code == 200, taken.text
