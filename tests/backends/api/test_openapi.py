"""The OpenAPI document describes every request body, from the models that validate it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.json_schema import models_json_schema

from backends.api import responses
from backends.api.app import CreateSession, PatchSession
from backends.api.auth import LoginBody
from backends.api.routes_tools import ToolModeChange
from connectors.scripted import call
from gui_agent.export import ExportDocument
from schema import ApprovalRequested, ApprovalResponse, ChatRequest, ControlRequest, TextDelta
from tests.backends.api.live import is_idle, running_backend

REF = "#/components/schemas/{model}"

# (method, path) -> (schema name, required, the model that validates the body)
BODIES: dict[tuple[str, str], tuple[str, bool, type[BaseModel]]] = {
    ("post", "/api/login"): ("LoginBody", False, LoginBody),
    ("post", "/api/sessions"): ("CreateSession", False, CreateSession),
    ("post", "/api/sessions/import"): ("ExportDocument", True, ExportDocument),
    ("post", "/api/sessions/replay"): ("ExportDocument", True, ExportDocument),
    ("patch", "/api/sessions/{session_id}"): ("PatchSession", True, PatchSession),
    ("post", "/api/sessions/{session_id}/messages"): ("ChatRequest", True, ChatRequest),
    ("post", "/api/sessions/{session_id}/approvals/{approval_id}"): (
        "ApprovalResponse",
        True,
        ApprovalResponse,
    ),
    ("post", "/api/sessions/{session_id}/control"): ("ControlRequest", True, ControlRequest),
    ("put", "/api/sessions/{session_id}/tools/{tool}"): ("ToolModeChange", True, ToolModeChange),
}
PATH_FIELDS = {"session_id", "approval_id"}


def refs(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from refs(value)


def test_the_openapi_document_describes_every_request_body(tmp_path: Path) -> None:
    with running_backend(tmp_path, docs=True) as backend:
        response = backend.client().http.get("/api/openapi.json")
    assert response.status_code == 200
    document = response.json()
    operations = {
        (method, path): operation
        for path, by_method in document["paths"].items()
        for method, operation in by_method.items()
    }
    assert {key for key, op in operations.items() if "requestBody" in op} == set(BODIES)
    schemas = document["components"]["schemas"]
    for key, (name, required, model) in BODIES.items():
        body = operations[key]["requestBody"]
        assert body["required"] is required, key
        assert body["content"]["application/json"]["schema"] == {
            "$ref": f"#/components/schemas/{name}"
        }
        schema = schemas[name]
        assert schema["properties"] and schema["additionalProperties"] is False, name
        # The validating model's own fields, no more, no fewer.
        assert set(schema["properties"]) == set(model.model_fields), name
        # What the path carries is not required in the body.
        assert not PATH_FIELDS & set(schema.get("required", [])), name
    for ref in refs(document):
        assert ref.removeprefix("#/components/schemas/") in schemas, ref

    assert schemas["ChatRequest"]["required"] == ["text"]
    assert schemas["ApprovalResponse"]["required"] == ["decision"]
    assert schemas["ControlRequest"]["properties"]["action"]["enum"] == [
        "retry",
        "edit_last",
        "clear",
    ]
    assert set(schemas["ExportDocument"]["required"]) == {"format", "version", "session"}


def test_without_docs_there_is_no_openapi_document(tmp_path: Path) -> None:
    with running_backend(tmp_path) as backend:
        response = backend.client().http.get("/api/openapi.json")
    assert response.status_code == 404


def answer_models() -> dict[str, type[BaseModel]]:
    """The models the document may name for a success body, by schema name."""
    found = {
        name: value
        for name, value in vars(responses).items()
        if isinstance(value, type)
        and issubclass(value, BaseModel)
        and value.__module__ == responses.__name__
    }
    return {**found, ExportDocument.__name__: ExportDocument}


def check_success(document: dict[str, Any], operation: dict[str, Any], response: Any) -> str:
    """The success body of `response` is the one `operation` documents for its status: the
    document names a model (by $ref), describes it exactly as the model's own JSON schema
    does, and the real body validates against that model with no field it does not list.
    Returns the model's name."""
    status = str(response.status_code)
    content = operation["responses"][status]["content"]
    assert set(content) == {"application/json"}, status
    ref = content["application/json"]["schema"]["$ref"]
    name: str = ref.removeprefix("#/components/schemas/")
    model = answer_models()[name]
    schemas = document["components"]["schemas"]
    _, own = models_json_schema([(model, "serialization")], ref_template=REF)
    for def_name, definition in own["$defs"].items():
        assert schemas[def_name] == definition, (name, def_name)
    body = response.json()
    model.model_validate(body)
    assert set(body) == set(schemas[name]["properties"]), (name, set(body))
    assert set(schemas[name].get("required", [])) <= set(body), name
    return name


def test_every_status_an_endpoint_answers_with_is_documented(tmp_path: Path) -> None:
    """Real requests, good and bad, to every operation: each status seen is in that
    operation's `responses`, every success body is the model the document names for that
    status, every error body is the documented error shape, and the document lists
    nothing FastAPI would say but the API never does (422)."""
    with running_backend(tmp_path, docs=True) as backend:
        api = backend.client().login()
        document = api.get("/api/openapi.json").json()
        operations = {
            (method, path): operation
            for path, by_method in document["paths"].items()
            for method, operation in by_method.items()
        }
        sid = api.create_session()
        exported = api.get(f"/api/sessions/{sid}/export").content
        bad_type = {"Content-Type": "text/plain"}
        other_tab = backend.client().login()  # the one signed out, not the probes' own
        signing_out = {"Authorization": f"Bearer {other_tab.token}"}
        s = f"/api/sessions/{sid}"
        probes: list[tuple[str, str, str, dict[str, Any]]] = [
            ("post", "/api/login", "/api/login", {}),
            ("post", "/api/logout", "/api/logout", {"headers": signing_out}),
            ("get", "/api/health", "/api/health", {}),
            ("get", "/api/models", "/api/models", {}),
            ("get", "/api/agents", "/api/agents", {}),
            ("get", "/api/sessions", "/api/sessions", {}),
            ("get", "/api/sessions", "/api/sessions?limit=0", {}),
            (
                "get",
                "/api/sessions/changes",
                "/api/sessions/changes",
                {"headers": {"Authorization": "Bearer forged"}},
            ),
            ("post", "/api/sessions", "/api/sessions", {"json": {"nope": 1}}),
            ("post", "/api/sessions", "/api/sessions", {"content": b"{}", "headers": bad_type}),
            ("post", "/api/sessions/import", "/api/sessions/import", {"content": exported}),
            ("post", "/api/sessions/import", "/api/sessions/import", {"content": b"x"}),
            ("post", "/api/sessions/replay", "/api/sessions/replay", {"content": exported}),
            ("post", "/api/sessions/replay", "/api/sessions/replay", {"content": b"x"}),
            ("get", "/api/sessions/{session_id}", s, {}),
            ("get", "/api/sessions/{session_id}", s + "?limit=-1", {}),
            ("get", "/api/sessions/{session_id}", "/api/sessions/nope", {}),
            ("patch", "/api/sessions/{session_id}", s, {"json": {"title": "t"}}),
            ("patch", "/api/sessions/{session_id}", s, {"content": b"{", "headers": bad_type}),
            ("post", "/api/sessions/{session_id}/messages", s + "/messages", {"json": {}}),
            ("post", "/api/sessions/{session_id}/stop", s + "/stop", {}),
            (
                "post",
                "/api/sessions/{session_id}/approvals/{approval_id}",
                s + "/approvals/a",
                {"json": {"decision": "deny"}},
            ),
            (
                "post",
                "/api/sessions/{session_id}/control",
                s + "/control",
                {"json": {"action": "clear"}},
            ),
            (
                "post",
                "/api/sessions/{session_id}/control",
                s + "/control",
                {"json": {"action": "retry"}},
            ),
            ("get", "/api/sessions/{session_id}/events", s + "/events?since=x", {}),
            ("get", "/api/sessions/{session_id}/export", s + "/export", {}),
            ("get", "/api/sessions/{session_id}/memory", s + "/memory", {}),
            ("get", "/api/sessions/{session_id}/memory", "/api/sessions/nope/memory", {}),
            ("delete", "/api/sessions/{session_id}/allowed-tools", s + "/allowed-tools", {}),
            (
                "delete",
                "/api/sessions/{session_id}/allowed-tools",
                s + "/allowed-tools?tool=",
                {},
            ),
            (
                "delete",
                "/api/sessions/{session_id}/allowed-tools",
                "/api/sessions/nope/allowed-tools",
                {},
            ),
            ("get", "/api/sessions/{session_id}/tools", s + "/tools", {}),
            ("get", "/api/sessions/{session_id}/tools", "/api/sessions/nope/tools", {}),
            (
                "put",
                "/api/sessions/{session_id}/tools/{tool}",
                s + "/tools/read_file",
                {"json": {"mode": "ask"}},
            ),
            (
                "put",
                "/api/sessions/{session_id}/tools/{tool}",
                s + "/tools/no_such_tool",
                {"json": {"mode": "ask"}},
            ),
            (
                "put",
                "/api/sessions/{session_id}/tools/{tool}",
                s + "/tools/read_file",
                {"content": b"{", "headers": bad_type},
            ),
        ]
        seen: dict[tuple[str, str], set[str]] = {}
        checked: set[tuple[str, str, str]] = set()

        def probe(method: str, template: str, url: str, **options: Any) -> Any:
            response = api.request(method.upper(), url, **options)
            assert response.status_code < 500, (url, response.text)
            status = str(response.status_code)
            seen.setdefault((method, template), set()).add(status)
            operation = operations[(method, template)]
            assert status in operation["responses"], (method, url, response.text)
            if response.status_code >= 400:
                assert set(response.json()) == {"error"}
                assert set(response.json()["error"]) == {"code", "message"}
            elif response.headers.get("content-type", "").startswith("application/json"):
                check_success(document, operation, response)
                checked.add((method, template, status))
            return response

        for method, template, url, options in probes:
            probe(method, template, url, **options)

        # A turn that asks for approval: answered once (200), then again (409).
        backend.scripted.push(call("run_python", code="print(1)"), "done")
        with api.events(sid) as stream:
            probe(
                "post", "/api/sessions/{session_id}/messages", s + "/messages", json={"text": "go"}
            )
            asked = stream.until(lambda e: isinstance(e, ApprovalRequested))[-1]
            assert isinstance(asked, ApprovalRequested)
            approval = (
                "post",
                "/api/sessions/{session_id}/approvals/{approval_id}",
                f"{s}/approvals/{asked.approval_id}",
            )
            probe(*approval, json={"decision": "allow_once"})
            assert probe(*approval, json={"decision": "deny"}).status_code == 409
            stream.until(is_idle)
        # A turn still running: retry is 409, stop ends it, then retry starts a new one (202).
        created = probe("post", "/api/sessions", "/api/sessions", json={"model": "slow"})
        slow = created.json()["session"]["id"]
        slow_path = f"/api/sessions/{slow}"
        control = ("post", "/api/sessions/{session_id}/control", slow_path + "/control")
        stop = ("post", "/api/sessions/{session_id}/stop", slow_path + "/stop")
        with api.events(slow) as stream:
            api.send(slow, "tick")
            stream.until(lambda e: isinstance(e, TextDelta))
            assert probe(*control, json={"action": "retry"}).status_code == 409
            assert probe(*stop).json() == {"stopped": True}
            stream.until(is_idle)
            assert probe(*control, json={"action": "retry"}).status_code == 202
            stream.until(lambda e: isinstance(e, TextDelta))
            assert probe(*stop).json() == {"stopped": True}
        probe("delete", "/api/sessions/{session_id}", s)
        for template in ("/api/models", s):
            anonymous = backend.client().request("GET", template)
            assert anonymous.status_code == 401
    # every operation was probed, and saw at least one error it documents
    assert set(seen) == set(operations)
    assert seen[("post", "/api/sessions/{session_id}/control")] == {"200", "202", "400", "409"}
    assert "409" in seen[approval[:2]]
    # every documented JSON success answer was seen and checked against its model
    documented = {
        (method, path, status)
        for (method, path), operation in operations.items()
        for status, answer in operation["responses"].items()
        if int(status) < 400 and "application/json" in answer.get("content", {})
    }
    assert documented == checked
    schemas = document["components"]["schemas"]
    assert "HTTPValidationError" not in schemas
    error_ref = {"$ref": "#/components/schemas/ErrorResponse"}
    for (method, path), operation in operations.items():
        assert "422" not in operation["responses"], (method, path)
        for status, answer in operation["responses"].items():
            if int(status) >= 400:
                assert answer["content"]["application/json"]["schema"] == error_ref
        public = path in ("/api/login", "/api/logout", "/api/health")
        assert ("security" in operation) is not public, (method, path)
        if not public:
            assert "401" in operation["responses"], (method, path)
            streams = ("/api/sessions/changes", "/api/sessions/{session_id}/events")
            # (the event streams take the login cookie too: a browser's EventSource)
            cookie: list[dict[str, list[str]]] = [{"cookie": []}] if path in streams else []
            assert operation["security"] == [{"bearer": []}, *cookie], (method, path)
    assert set(schemas["ErrorResponse"]["properties"]) == {"error"}
    events = operations[("get", "/api/sessions/{session_id}/events")]
    assert set(events["responses"]["200"]["content"]) == {"text/event-stream"}
    assert {p["name"] for p in events["parameters"]} >= {"Last-Event-ID", "since", "epoch"}
    assert document["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"
    assert document["components"]["securitySchemes"]["cookie"] == {
        "type": "apiKey",
        "in": "cookie",
        "name": "gui_agent_token",
    }
