"""The OpenAPI document describes every request body, from the models that validate it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from backends.api.app import CreateSession, PatchSession
from backends.api.auth import LoginBody
from gui_agent.export import ExportDocument
from schema import ApprovalResponse, ChatRequest, ControlRequest
from tests.backends.api.live import running_backend

# (method, path) -> (schema name, required, the model that validates the body)
BODIES: dict[tuple[str, str], tuple[str, bool, type[BaseModel]]] = {
    ("post", "/api/login"): ("LoginBody", False, LoginBody),
    ("post", "/api/sessions"): ("CreateSession", False, CreateSession),
    ("post", "/api/sessions/import"): ("ExportDocument", True, ExportDocument),
    ("patch", "/api/sessions/{session_id}"): ("PatchSession", True, PatchSession),
    ("post", "/api/sessions/{session_id}/messages"): ("ChatRequest", True, ChatRequest),
    ("post", "/api/sessions/{session_id}/approvals/{approval_id}"): (
        "ApprovalResponse",
        True,
        ApprovalResponse,
    ),
    ("post", "/api/sessions/{session_id}/control"): ("ControlRequest", True, ControlRequest),
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
