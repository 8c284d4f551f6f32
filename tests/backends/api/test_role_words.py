"""The HTTP API takes an agent role by the words the Python API and the terminal take
("planner", "thought", ... in any case) as well as by its enum name, wherever a body names
one: creating a chat, changing it, sending a message. A word for no role on offer is
refused naming the words that are."""

from __future__ import annotations

from typing import Any

from backends.api.client import GuiAgentClient
from schema import AgentName
from tests.backends.api.live import Api, Backend, is_idle


def error_of(response: Any) -> dict[str, str]:
    body = response.json()
    assert set(body) == {"error"}, body
    return body["error"]  # type: ignore[no-any-return]


def test_a_role_is_taken_by_its_word_in_any_case_or_its_enum_name(api: Api) -> None:
    created = api.post("/api/sessions", json={"agent": "planner"})
    assert created.status_code == 201, created.text
    session = created.json()["session"]
    assert session["agent"] == "LLM_PLANNER"
    url = f"/api/sessions/{session['id']}"

    for word, role in (("Thought", "THOUGHT"), ("CREW", "CREW"), ("supervisor", "SUPERVISOR")):
        patched = api.request("PATCH", url, json={"agent": word})
        assert patched.status_code == 200, patched.text
        assert patched.json()["session"]["agent"] == role
    enum_name = api.request("PATCH", url, json={"agent": "LLM_PLANNER"})
    assert enum_name.json()["session"]["agent"] == "LLM_PLANNER"

    with api.events(session["id"]) as stream:
        sent = api.post(f"{url}/messages", json={"text": "hello", "agent": " Executor "})
        assert sent.status_code == 202, sent.text
        stream.until(is_idle)
    assert api.session(session["id"])["session"]["agent"] == "AGENT_EXECUTOR"


def test_a_word_for_no_role_names_the_words_that_are(api: Api) -> None:
    session_id = api.create_session()
    url = f"/api/sessions/{session_id}"
    for method, path, body in (
        ("POST", "/api/sessions", {"agent": "plannr"}),
        ("PATCH", url, {"agent": "plannr"}),
        ("POST", f"{url}/messages", {"text": "hi", "agent": "plannr"}),
    ):
        refused = api.request(method, path, json=body)
        assert refused.status_code == 400, refused.text
        assert error_of(refused) == {
            "code": "invalid_request",
            "message": "agent: unknown role 'plannr'; choose one of: executor, planner, "
            "supervisor, crew, thought",
        }
    assert api.session(session_id)["messages"] == []


def test_the_python_client_takes_the_words_too(backend: Backend) -> None:
    with GuiAgentClient(backend.base_url) as client:
        client.login()
        chat = client.create_session(agent="planner")
        assert chat.agent is AgentName.LLM_PLANNER
        changed = client.update_session(chat.id, agent="Thought")
        assert changed.agent is AgentName.THOUGHT
