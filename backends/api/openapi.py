"""The request bodies in the API's OpenAPI document.

Endpoints read their bodies raw, with a size cap, and validate them with the pydantic
models themselves (see `bodies`), so FastAPI sees no body parameter and would describe
none. `RequestBodies` puts the description back without touching how bodies are read:
each route names its model through `RequestBodies.body(...)` (its `openapi_extra`), and
`install` adds the models' JSON schemas to the document's `components/schemas`.

Fields a route takes from its path (`session_id`, `approval_id`) are not required in the
body; sent there, they must be the path's value (another is refused, 400).

Errors: each route lists the statuses it really answers with (`errors(...)`), each with the
one error body (`ErrorResponse`); FastAPI's 422 is dropped, since the API never sends it (a
request that does not validate is 400). Every route but the public ones names the bearer
token as its security scheme.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI
from fastapi.routing import APIRoute
from pydantic import BaseModel
from pydantic.json_schema import JsonSchemaMode, models_json_schema

from gui_agent.agents.roles import ROLE_NAMES
from gui_agent.exceptions import ConfigError

REF_TEMPLATE = "#/components/schemas/{model}"
JSON = "application/json"
BEARER = "bearer"
COOKIE = "cookie"

TOKEN_COOKIE = "gui_agent_token"
"""The name of the login cookie the event streams accept (see `backends.api.auth`)."""
ERROR_DESCRIPTIONS = {
    400: "The request breaks the contract: bad JSON, a field, a parameter, a state",
    401: "No valid bearer token (missing, forged, expired, its user removed, or the "
    "password changed since); for login, a wrong user name or password",
    404: "No such session (another user's reads the same), approval or endpoint",
    409: "The request clashes with what the session is doing: a turn is running, another "
    "retry or edit is in progress, or the approval was already answered",
    413: "The body is larger than the server takes",
    415: "The body is not declared as JSON (send Content-Type: application/json)",
    429: "Too many failed logins: wait Retry-After seconds",
    503: "The users file or the session store failed; the server log says why",
}


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorResponse(BaseModel):
    """Every error the API answers with."""

    error: ErrorDetail


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The `responses` of a route for the error statuses it answers with."""
    ref = {"$ref": REF_TEMPLATE.format(model=ErrorResponse.__name__)}
    return {
        status: {"description": ERROR_DESCRIPTIONS[status], "content": {JSON: {"schema": ref}}}
        for status in statuses
    }


class RequestBodies:
    """The body models of one app's routes, for its OpenAPI document."""

    def __init__(self) -> None:
        self._models: dict[str, tuple[type[BaseModel], frozenset[str]]] = {}

    def body(
        self,
        model: type[BaseModel],
        *,
        required: bool = True,
        description: str | None = None,
        from_path: Sequence[str] = (),
    ) -> dict[str, Any]:
        """The `openapi_extra` of a route whose JSON body `model` validates."""
        name = model.__name__
        path_fields = frozenset(from_path)
        known = self._models.setdefault(name, (model, path_fields))
        if known != (model, path_fields):
            raise ConfigError(f"two different request bodies are called {name!r}")
        request_body: dict[str, Any] = {
            "required": required,
            "content": {JSON: {"schema": {"$ref": REF_TEMPLATE.format(model=name)}}},
        }
        if description:
            request_body["description"] = description
        return {"requestBody": request_body}

    def schemas(self) -> dict[str, Any]:
        """The JSON schemas of the body models and of every model they use, by name."""
        if not self._models:
            return {}
        mode: JsonSchemaMode = "validation"
        models = [(model, mode) for model, _ in self._models.values()]
        _, top = models_json_schema(models, ref_template=REF_TEMPLATE)
        schemas: dict[str, Any] = top.get("$defs", {})
        for name, (_, path_fields) in self._models.items():
            schemas[name] = _roles_described(_path_fields_optional(schemas[name], path_fields))
        return schemas

    def install(
        self, app: FastAPI, *, public: Sequence[str] = (), cookie: Sequence[str] = ()
    ) -> None:
        """Make `app.openapi()` (what /api/openapi.json serves) describe the bodies and the
        error body too, without the 422 FastAPI adds, and with the bearer token on every
        path but `public` ones (on `cookie` paths, the login cookie will do instead)."""
        generate = app.openapi

        def openapi() -> dict[str, Any]:
            if app.openapi_schema is None:
                document = generate()
                _drop_validation_errors(document)
                components = document.setdefault("components", {})
                schemas = components.setdefault("schemas", {})
                schemas.update(_answer_schemas(app))
                schemas.update(self.schemas())
                schemas.update(_error_schemas())
                components["securitySchemes"] = {
                    BEARER: {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"},
                    COOKIE: {"type": "apiKey", "in": "cookie", "name": TOKEN_COOKIE},
                }
                for path, operations in document.get("paths", {}).items():
                    if path in public:
                        continue
                    security: list[dict[str, list[str]]] = [{BEARER: []}]
                    if path in cookie:
                        security.append({COOKIE: []})
                    for operation in operations.values():
                        operation["security"] = security
                app.openapi_schema = document
            return app.openapi_schema

        app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented hook


def _answer_schemas(app: FastAPI) -> dict[str, Any]:
    """The JSON schemas of the routes' answer models (`responses.success`) and every model
    they use, as pydantic writes them. FastAPI writes its document leaving out every null,
    so a field of an answer's that defaults to null (`StreamingReply.retrying`) read as
    having no default at all."""
    models = {
        answer["model"]
        for route in app.routes
        if isinstance(route, APIRoute)
        for answer in route.responses.values()
        if isinstance(answer.get("model"), type) and issubclass(answer["model"], BaseModel)
    }
    if not models:
        return {}
    ordered = sorted(models, key=lambda model: model.__name__)
    _, top = models_json_schema(
        [(model, "serialization") for model in ordered], ref_template=REF_TEMPLATE
    )
    schemas: dict[str, Any] = top.get("$defs", {})
    return schemas


def _error_schemas() -> dict[str, Any]:
    _, top = models_json_schema([(ErrorResponse, "serialization")], ref_template=REF_TEMPLATE)
    schemas: dict[str, Any] = top.get("$defs", {})
    return schemas


def _drop_validation_errors(document: dict[str, Any]) -> None:
    """Remove FastAPI's 422 answers and their schemas: the API answers 400 instead."""
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            operation.get("responses", {}).pop("422", None)
    schemas = document.get("components", {}).get("schemas", {})
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)


def _path_fields_optional(schema: dict[str, Any], path_fields: frozenset[str]) -> dict[str, Any]:
    """`schema` with `path_fields` no longer required, each saying it comes from the path."""
    if not path_fields:
        return schema
    properties = {
        name: (
            {**spec, "description": "Taken from the path; if sent, it must be the path's."}
            if name in path_fields
            else spec
        )
        for name, spec in schema.get("properties", {}).items()
    }
    required = [name for name in schema.get("required", []) if name not in path_fields]
    updated = {**schema, "properties": properties, "required": required}
    if not required:
        del updated["required"]
    return updated


def _roles_described(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with its `agent`, if any, saying it also takes a role's word (`roles`)."""
    agent = schema.get("properties", {}).get("agent")
    if agent is None:
        return schema
    words = ", ".join(ROLE_NAMES)
    described = {**agent, "description": f"A role's name, or its word ({words}), in any case."}
    return {**schema, "properties": {**schema["properties"], "agent": described}}
