"""The tools a person allowed for a session, over HTTP: `allowed_tools` in the session's
detail, a `session_updated` event when it changes, and DELETE .../allowed-tools to ask again
(one tool or all), through the Python client against the real server; nobody else's chat."""

from __future__ import annotations

import httpx
import pytest

from backends.api.client import ApiError, GuiAgentClient, NotFound
from connectors.scripted import call
from schema import ApprovalDecision, ApprovalRequested, Event, SessionUpdated
from tests.backends.api.live import ALICE, BOB, Backend, client_of, is_idle


@pytest.fixture
def backend(two_users: Backend) -> Backend:
    return two_users


def turn_answered(
    client: GuiAgentClient, session_id: str, decision: ApprovalDecision | None
) -> list[Event]:
    """Send a message; answer its approval with `decision` (None: expect none asked)."""
    seen: list[Event] = []
    with client.events(session_id) as stream:
        client.send_message(session_id, "run it")
        for event in stream:
            seen.append(event)
            if isinstance(event, ApprovalRequested):
                assert decision is not None, "it asked, though the tool was allowed"
                client.answer_approval(session_id, event.approval_id, decision)
            if is_idle(event):
                return seen
    raise AssertionError("the stream ended before the turn did")


def allowed_said(events: list[Event]) -> list[list[str]]:
    return [
        e.fields["allowed_tools"]
        for e in events
        if isinstance(e, SessionUpdated) and "allowed_tools" in e.fields
    ]


def test_allowed_tools_are_listed_announced_and_forgotten(backend: Backend) -> None:
    for _ in range(3):
        backend.scripted.push(call("run_python", code="print(6*7)"), "42.")
    with client_of(backend, ALICE) as alice:
        session_id = alice.create_session().id
        assert alice.get_session(session_id).allowed_tools == []
        events = turn_answered(alice, session_id, ApprovalDecision.ALLOW_SESSION)
        assert allowed_said(events) == [["run_python"]]
        assert alice.get_session(session_id).allowed_tools == ["run_python"]
        turn_answered(alice, session_id, None)  # ran without asking

        assert alice.forget_allowed_tools(session_id, tool="write_file") == ["run_python"]
        with alice.events(session_id) as stream:
            assert alice.forget_allowed_tools(session_id) == []
            said = next(e for e in stream if isinstance(e, SessionUpdated))
        assert said.fields == {"allowed_tools": []}
        assert alice.get_session(session_id).allowed_tools == []
        events = turn_answered(alice, session_id, ApprovalDecision.DENY)  # it asks again
        assert any(isinstance(e, ApprovalRequested) for e in events)


def test_forgetting_needs_the_owner_and_a_sane_tool_name(backend: Backend) -> None:
    with client_of(backend, ALICE) as alice, client_of(backend, BOB) as bob:
        session_id = alice.create_session().id
        with pytest.raises(NotFound):
            bob.forget_allowed_tools(session_id)
        path = f"{backend.base_url}/api/sessions/{session_id}/allowed-tools"
        assert httpx.delete(path).status_code == 401  # no token
        token = {"Authorization": f"Bearer {alice.token}"}
        too_long = httpx.delete(path, params={"tool": "x" * 201}, headers=token)
        assert too_long.status_code == 400, too_long.text
        assert httpx.delete(path, headers=token).json() == {"allowed_tools": []}


def test_each_tool_is_listed_with_its_mode_and_a_mode_set_for_the_chat_holds(
    backend: Backend,
) -> None:
    backend.scripted.push(call("run_python", code="print(1)"), "Refused, then.")
    with client_of(backend, ALICE) as alice, client_of(backend, BOB) as bob:
        session_id = alice.create_session().id
        tools = {t.name: t for t in alice.tools(session_id)}
        python = tools["run_python"]
        assert (python.mode, python.chosen, python.destructive) == ("ask", None, True)
        assert tools["read_file"].mode == "allow" and not tools["read_file"].destructive

        denied = alice.set_tool_mode(session_id, "run_python", "deny")
        assert (denied.mode, denied.chosen) == ("deny", "deny")
        record = alice.get_session(session_id).session
        assert record.settings.permissions == {"run_python": "deny"}  # kept with the chat
        events = turn_answered(alice, session_id, None)  # refused without asking
        assert not any(isinstance(e, ApprovalRequested) for e in events)

        back = alice.set_tool_mode(session_id, "run_python", None)
        assert (back.mode, back.chosen) == ("ask", None)
        assert alice.get_session(session_id).session.settings.permissions == {}
        with pytest.raises(ApiError, match="no tool 'send_mail'"):
            alice.set_tool_mode(session_id, "send_mail", "allow")
        with pytest.raises(NotFound):
            bob.tools(session_id)
        with pytest.raises(NotFound):
            bob.set_tool_mode(session_id, "run_python", "allow")
        path = f"{backend.base_url}/api/sessions/{session_id}/tools/run_python"
        token = {"Authorization": f"Bearer {alice.token}"}
        assert httpx.put(path, json={"mode": "always"}, headers=token).status_code == 400
        assert httpx.put(path, json={"mode": None, "x": 1}, headers=token).status_code == 400
        assert httpx.put(path, json={"mode": "allow"}).status_code == 401
