"""Request bodies are read strictly typed: a value of the wrong JSON type is refused (400,
naming the field), never converted (`true` saved as a count of 1, "yes" as a switch turned
on, "0.5" as a number), while every kind of value the API takes as its own type still goes
through: enums by their names, arrays for tuples, whole numbers for decimals, nulls."""

from __future__ import annotations

from typing import Any

import pytest

from tests.backends.api.live import Api

PNG = "iVBORw0KGgoAAAAAAAAAAAAAAAAAAAAA"  # (the PNG signature and zeros, base64)


def error_of(response: Any) -> dict[str, str]:
    body = response.json()
    assert set(body) == {"error"}, body
    return body["error"]  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (
            {"settings": {"max_tokens": True}},
            "settings.max_tokens: Input should be a valid integer",
        ),
        (
            {"settings": {"max_tokens": "100"}},
            "settings.max_tokens: Input should be a valid integer",
        ),
        (
            {"settings": {"temperature": "0.5"}},
            "settings.temperature: Input should be a valid number",
        ),
        ({"autochat": {"max_turns": True}}, "autochat.max_turns: Input should be a valid integer"),
        ({"autochat": {"enabled": "yes"}}, "autochat.enabled: Input should be a valid boolean"),
        ({"autochat": {"enabled": 1}}, "autochat.enabled: Input should be a valid boolean"),
        ({"autochat": {"delay_s": "1e1"}}, "autochat.delay_s: Input should be a valid number"),
    ],
    ids=[
        "true-as-count",
        "text-as-count",
        "text-as-decimal",
        "true-as-turns",
        "word-as-switch",
        "number-as-switch",
        "exponent-text-as-decimal",
    ],
)
def test_a_setting_of_the_wrong_type_is_refused_not_converted(
    api: Api, body: dict[str, Any], said: str
) -> None:
    session_id = api.create_session()
    before = api.session(session_id)["session"]
    response = api.request("PATCH", f"/api/sessions/{session_id}", json=body)
    assert response.status_code == 400, response.text
    assert error_of(response) == {"code": "invalid_request", "message": said}
    assert api.session(session_id)["session"] == before

    created = api.post("/api/sessions", json={"settings": {"max_tokens": True}})
    assert created.status_code == 400, created.text
    assert error_of(created)["message"].startswith("settings.max_tokens: Input should be")


def test_every_value_of_its_own_type_is_still_taken(api: Api) -> None:
    session_id = api.create_session(
        agent="THOUGHT", settings={"temperature": 1, "permissions": {"run_python": "allow"}}
    )
    url = f"/api/sessions/{session_id}"
    changes = {
        "title": "Typed",
        "agent": "AGENT_EXECUTOR",
        "settings": {"max_tokens": 100, "approval_timeout_s": 30, "memory_token_budget": None},
        "autochat": {"max_turns": 3, "delay_s": 2, "time_budget_s": 1.5, "token_budget": None},
    }
    patched = api.request("PATCH", url, json=changes)
    assert patched.status_code == 200, patched.text
    record = patched.json()["session"]
    assert record["agent"] == "AGENT_EXECUTOR" and record["title"] == "Typed"
    assert record["settings"]["temperature"] == 1.0
    assert record["settings"]["permissions"] == {"run_python": "allow"}
    assert record["settings"]["max_tokens"] == 100
    assert record["autochat"]["delay_s"] == 2.0 and record["autochat"]["max_turns"] == 3

    image = {"media_type": "image/png", "data": PNG}
    sent = api.post(f"{url}/messages", json={"text": "look", "images": [image]})
    assert sent.status_code == 202, sent.text
    mode = api.request("PUT", f"{url}/tools/run_python", json={"mode": "deny"})
    assert mode.status_code == 200, mode.text
    unknown = api.post(f"{url}/approvals/a1", json={"decision": "allow_once", "note": None})
    assert unknown.status_code == 404, unknown.text  # read as a decision; no such approval


def test_half_a_surrogate_pair_in_a_setting_is_refused_naming_the_field(api: Api) -> None:
    session_id = api.create_session()
    response = api.request(
        "PATCH",
        f"/api/sessions/{session_id}",
        content=b'{"settings": {"system_prompt": "broken \\ud800"}}',
        headers={"Content-Type": "application/json"},
    )
    assert response.status_code == 400, response.text
    assert error_of(response)["message"].startswith(
        "settings.system_prompt: Input should be a valid string"
    )
    named = api.request(
        "PATCH",
        f"/api/sessions/{session_id}",
        content=b'{"settings": {"name \\ud800": 1}}',
        headers={"Content-Type": "application/json"},
    )
    assert named.status_code == 400, named.text
    assert error_of(named)["message"].startswith("settings.name \\ud800: Input should be")
