"""Who, and what is on offer: login and logout, health, the models and the agent roles, and
the browser client.

POST /api/login   -> {token, expires_at, user, notice} (and the login cookie, see `auth`)
POST /api/logout  -> 204, the token it carries signed out and the login cookie removed
GET  /api/health  -> {status, protocol_version, auth}   (no token needed)
GET  /api/models | /api/agents
GET  /api/client.js  -> the API's browser client, an ES module (no token needed; not an
                        endpoint of the OpenAPI document)
"""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path
from typing import Final

from fastapi import FastAPI, Request, Response

from backends.api.auth import LoginBody, clear_token_cookie, set_token_cookie
from backends.api.bodies import no_body
from backends.api.context import ApiContext
from backends.api.errors import not_found
from backends.api.openapi import errors
from backends.api.responses import (
    AgentEntry,
    AgentsAnswer,
    HealthAnswer,
    LoginAnswer,
    ModelEntry,
    ModelsAnswer,
    send,
    success,
)
from schema import PROTOCOL_VERSION

logger = logging.getLogger(__name__)

PUBLIC_PATHS = ("/api/login", "/api/logout", "/api/health")
"""The endpoints that need no token."""

CLIENT_PATH = "/api/client.js"
CLIENT_FILE: Final = Path(__file__).resolve().parents[2] / "assets" / "gui-agent-client.js"
"""The browser client (`GuiAgentClient` for React and other web front ends), served as is."""
_CLIENT_HEADERS: Final = {
    "Cache-Control": "no-cache",  # a new version is picked up at once, revalidated by ETag
    "X-Content-Type-Options": "nosniff",
}


def add_access_routes(app: FastAPI, api: ApiContext) -> None:
    auth, manager = api.auth, api.manager

    @app.post(
        "/api/login",
        responses={
            **success(LoginAnswer, "A bearer token for the other endpoints"),
            **errors(400, 401, 413, 415, 429, 503),
        },
        openapi_extra=api.bodies.body(
            LoginBody,
            required=False,
            description="Needed when login is by password (GET /api/health says `auth`).",
        ),
    )
    async def login(request: Request) -> Response:
        answer = await auth.login(request)
        return set_token_cookie(send(answer), answer, secure=request.url.scheme == "https")

    @app.post(
        "/api/logout",
        status_code=204,
        responses={
            204: {
                "description": "The token the request carries (its Authorization header, "
                "else the login cookie) is signed out: refused from now on. The login "
                "cookie is removed. Needs no token: without a good one, only the cookie goes."
            },
            **errors(400, 413, 415),
        },
    )
    async def logout(request: Request) -> Response:
        """Sign out the token the request carries and remove the login cookie the event
        streams accept. The caller's other tokens (other tabs, devices) stay good."""
        await no_body(request)
        await auth.sign_out(request)
        return clear_token_cookie(Response(status_code=204), secure=request.url.scheme == "https")

    try:
        client: bytes | None = CLIENT_FILE.read_bytes()  # read once, with the app
    except OSError as error:  # an install without the assets folder: the API still serves
        logger.warning("the browser client %s is missing (%s)", CLIENT_FILE, error.strerror)
        client = None
    etag = f'"{hashlib.sha256(client or b"").hexdigest()[:32]}"'

    @app.get(CLIENT_PATH, include_in_schema=False)
    async def client_module(request: Request) -> Response:
        if client is None:
            raise not_found("this server was installed without its browser client")
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers={**_CLIENT_HEADERS, "ETag": etag})
        return Response(
            client,
            media_type="text/javascript; charset=utf-8",
            headers={**_CLIENT_HEADERS, "ETag": etag},
        )

    @app.get("/api/health", responses=success(HealthAnswer, "The server is up; how to log in"))
    async def health() -> Response:
        return send(HealthAnswer(protocol_version=PROTOCOL_VERSION, auth=auth.mode))

    @app.get(
        "/api/models",
        responses={**success(ModelsAnswer, "The configured models"), **errors(401, 503)},
    )
    async def models(request: Request) -> Response:
        await auth.owner(request)
        default = manager.models.default
        entries = [ModelEntry(name=n, default=n == default) for n in manager.models.names()]
        answer = ModelsAnswer(
            default=default, models=entries, notice=api.notice, left_out=list(api.left_out)
        )
        return send(answer)

    @app.get(
        "/api/agents",
        responses={**success(AgentsAnswer, "The agent roles on offer"), **errors(401, 503)},
    )
    async def agents(request: Request) -> Response:
        await auth.owner(request)
        roles = manager.architectures_factory()
        entries = [
            AgentEntry(name=name, description=role.description) for name, role in roles.items()
        ]
        return send(AgentsAnswer(default=next(iter(roles), None), agents=entries))
