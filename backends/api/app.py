"""The HTTP + SSE API: the contract Streamlit, React and scripts use to drive sessions.

`create_api(manager, tokens, ...)` returns a FastAPI app whose routes all live under `/api`
(the server mounts the Gradio page on the same app at `/`). Bodies are JSON, read with a
size cap and validated by the `schema.requests` models, strictly typed (`true` is no
number, "0.5" no number, "yes" no boolean; see `strict`); an id in the body must
be the one in the path (another is 400). An `agent` is a role's word ("planner", any
case) or its enum name (see `roles`). The OpenAPI document (with `docs`) describes each
body from these models (see `openapi`); the routes read and validate them. Every endpoint
but login, logout and health needs a bearer token (the two event streams also take the
login cookie, for a browser's EventSource), and every session lookup is scoped to the
token's user: someone else's session is 404, like an unknown one. Bodies with fields an
endpoint does not define are refused (400), never silently trimmed. Each success body is a
model from `responses`, named in the OpenAPI document. Errors read `{"error": {"code":
..., "message": ...}}` (see `errors`); a method an endpoint does not take is 405 with
`Allow` (a fixed path is never taken for an id: `GET /api/sessions/import` names POST, it
looks up no session "import"), an unknown path under /api 404; a well-formed request that
clashes with what the session is doing (a retry, edit or clear while a turn runs, a second
answer to an approval) is 409 (see `conflicts`).

    POST   /api/login                                  -> {token, expires_at, user, notice}
                                                          (and the login cookie, see `auth`)
    POST   /api/logout                                 -> 204, the login cookie removed
    GET    /api/health                                 -> {status, protocol_version, auth}
    GET    /api/models | /api/agents
    GET    /api/client.js                              -> the browser client (an ES module for
                                                          React and other web front ends)
    GET    /api/sessions?q=&limit=&offset=             -> {sessions: [record], ...}
    GET    /api/sessions/changes  (SSE: the caller's chats created, imported, renamed,
                                   deleted, from anywhere; see `changes`)
    POST   /api/sessions          {agent?, model?, settings?, title?}  -> 201 {session}
    GET    /api/sessions/{id}     ?limit=              -> {session, messages, state, ...}
    PATCH  /api/sessions/{id}     {title?, settings?, autochat?, agent?, model?}  (partial)
    DELETE /api/sessions/{id}                          -> 204 (its working folder too)
    POST   /api/sessions/{id}/messages  {text, images?, agent?}  -> 202 {message_id}
    POST   /api/sessions/{id}/stop
    POST   /api/sessions/{id}/approvals/{approval_id}  {decision, note?}
    POST   /api/sessions/{id}/control   {action: retry|edit_last|clear, text?, images?, message_id?}
    GET    /api/sessions/{id}/memory    -> what the next model call is sent (the window)
    GET    /api/sessions/{id}/tools     -> {tools: [{name, mode, chosen, ...}]}
    PUT    /api/sessions/{id}/tools/{tool}  {mode: ask|allow|deny|null}  -> the tool
    DELETE /api/sessions/{id}/allowed-tools  ?tool=    -> {allowed_tools}
    GET    /api/sessions/{id}/events    (SSE, ids <epoch>-<seq>; Last-Event-ID or ?since=&epoch=;
                                        ends with `event: closed` when access ends or
                                        the chat is deleted, see `sse`)
    GET    /api/sessions/{id}/export    ?allow_unimportable=  -> the export document, as an
                                        attachment named after the chat's title; 413 when
                                        it could not be imported back (over
                                        `max_import_bytes`)
    POST   /api/sessions/import         (body: an export document)
                                        -> 201 {session, message_count, reset, repairs,
                                        summary}
    POST   /api/sessions/replay         (body: an export document) -> {title, message_count,
                                        events}: its events in order, nothing saved

PATCH changes only what it is sent: `settings` and `autochat` are merged field by field into
the session's current ones (a field sent replaces that field; `permissions` is one field, so
it is replaced as a whole map), the result is validated, and unknown fields are refused.
Creating a session merges `settings` into the defaults the same way.

An import is untrusted: it never carries tool permissions or a running AutoChat. `reset`
in the answer lists what the document held and the new session does not
(`settings.permissions`, `autochat.enabled`). `repairs` counts what was changed so the
history can be sent to any model (see `gui_agent.export`): tool results answering no call
dropped, calls without a result answered, SYSTEM messages kept as display-only notes.

The routes live by resource: `routes_access` (login, health, models, agents),
`routes_sessions` (the records, their change feed, import and export), `routes_replay` (an
export's events, to show it step by step), `routes_turns` (messages, Stop, approvals,
retry/edit/clear), `routes_tools` (a chat's tools, their modes and the tools allowed for
the session) and `routes_events` (a session's event stream); what they share (the manager,
the authenticator, the limits, the per-session epochs and edit locks) is one
`context.ApiContext` per app. This module assembles them, in the order the
OpenAPI document lists them, and answers everything else under /api.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

from fastapi import FastAPI, Request, Response
from fastapi.routing import APIRoute
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

from backends.api.auth import Authenticator, LoginThrottles
from backends.api.bodies import MAX_MESSAGE_BODY_BYTES
from backends.api.context import MAX_SESSION_ID_CHARS, ApiContext
from backends.api.errors import ApiError, install_error_handlers, not_found, shortened
from backends.api.openapi import RequestBodies
from backends.api.routes_access import PUBLIC_PATHS, add_access_routes
from backends.api.routes_events import EVENTS_PATH, add_event_routes
from backends.api.routes_replay import add_replay_route
from backends.api.routes_sessions import (
    CHANGES_PATH,
    MAX_OFFSET,
    MAX_PAGE_SIZE,
    MAX_QUERY_CHARS,
    PAGE_SIZE,
    CreateSession,
    PatchSession,
    add_export_route,
    add_session_routes,
    check_model,
    merged,
)
from backends.api.routes_tools import add_tool_routes
from backends.api.routes_turns import SETTLE_TIMEOUT_S, add_turn_routes
from backends.api.sse import DEFAULT_RECHECK_S
from backends.api.timing import DEFAULT_KEEPALIVE_S
from gui_agent.auth import ProxyHeaderAuth, RevokedTokens, TokenService, UserDB
from gui_agent.exceptions import ConfigError
from gui_agent.export import MAX_IMPORT_BYTES
from gui_agent.manager import SessionManager
from schema import PROTOCOL_VERSION

__all__ = [  # (with the names other modules and tests have long imported from here)
    "DEFAULT_AUTH_RECHECK_S",
    "DEFAULT_KEEPALIVE_S",
    "DEFAULT_MAX_BODY_BYTES",
    "HTTP_METHODS",
    "MAX_OFFSET",
    "MAX_PAGE_SIZE",
    "MAX_QUERY_CHARS",
    "MAX_SESSION_ID_CHARS",
    "PAGE_SIZE",
    "SETTLE_TIMEOUT_S",
    "CreateSession",
    "PatchSession",
    "check_model",
    "create_api",
    "merged",
]

DEFAULT_MAX_BODY_BYTES = MAX_MESSAGE_BODY_BYTES
"""The largest JSON body accepted: a message with every image and all the text a message
may carry (see `bodies.MAX_MESSAGE_BODY_BYTES`); imports have their own cap."""
DEFAULT_AUTH_RECHECK_S = DEFAULT_RECHECK_S
"""How often an open event stream checks its token is still good and its user still in
the users file: a removed user's streams end within this many seconds."""
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE")


def create_api(
    manager: SessionManager,
    tokens: TokenService,
    *,
    users: UserDB | None = None,
    proxy: ProxyHeaderAuth | None = None,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    max_import_bytes: int = MAX_IMPORT_BYTES,
    keepalive_s: float = DEFAULT_KEEPALIVE_S,
    auth_recheck_s: float = DEFAULT_AUTH_RECHECK_S,
    notice: str | None = None,
    left_out: Sequence[str] = (),
    docs: bool = False,
    throttles: LoginThrottles | None = None,
    closing: asyncio.Event | None = None,
    users_changed: Callable[[], Awaitable[object]] | None = None,
    revoked: RevokedTokens | None = None,
) -> FastAPI:
    """The API app over `manager`. `users` enables password login, `proxy` the trusted
    header; with neither, login issues a token for "local" (loopback development).
    `notice` and `left_out` (why models the environment configures are not offered) go out
    with the models. `docs` serves the OpenAPI schema and pages under /api/docs.
    `throttles` counts failed logins (pass the page's, so both count together). An open
    event stream checks its caller's access again every `auth_recheck_s` seconds.
    `closing`, once set (the server is shutting down), ends the chats-list streams; session
    streams end as their sessions close. `users_changed` applies a change of the users file
    at once (the server's `UsersWatcher.check`): a request refused for a user the file no
    longer has, or whose password changed, calls it first (see `backends.api.auth`).
    `revoked` keeps the tokens signed out (`POST /api/logout`); by default in memory only."""
    if auth_recheck_s <= 0:
        raise ConfigError(f"auth_recheck_s must be positive, not {auth_recheck_s}")
    auth = Authenticator(
        tokens=tokens,
        users=users,
        proxy=proxy,
        throttles=throttles or LoginThrottles(),
        users_changed=users_changed,
        revoked=revoked if revoked is not None else RevokedTokens(),
    )
    app = FastAPI(
        title="GuiAgent API",
        version=PROTOCOL_VERSION,
        docs_url="/api/docs" if docs else None,
        redoc_url=None,
        openapi_url="/api/openapi.json" if docs else None,
    )
    install_error_handlers(app)
    api = ApiContext(
        manager=manager,
        auth=auth,
        bodies=RequestBodies(),
        max_body_bytes=max_body_bytes,
        max_import_bytes=max_import_bytes,
        keepalive_s=keepalive_s,
        auth_recheck_s=auth_recheck_s,
        notice=notice,
        left_out=tuple(left_out),
        closing=closing,
    )
    add_access_routes(app, api)
    add_session_routes(app, api)
    add_turn_routes(app, api)
    add_tool_routes(app, api)
    add_event_routes(app, api)
    add_export_route(app, api)
    add_replay_route(app, api)
    _answer_the_rest(app)
    api.bodies.install(app, public=PUBLIC_PATHS, cookie=(CHANGES_PATH, EVENTS_PATH))
    return app


def _answer_the_rest(app: FastAPI) -> None:
    """Answer what no endpoint takes: a fixed path's other methods (routed here before a
    pattern's route could take its fixed segment for an id: `GET /api/sessions/import` is
    405, never a lookup of session "import"), then anything else under /api."""

    async def unknown(request: Request) -> Response:
        """Anything else under /api, whatever the method: 405 naming the methods the path
        takes, or 404; in the API's error shape either way (never the page's)."""
        path = shortened(request.url.path)
        allowed = _methods_of(app.routes, request.scope)
        if allowed:
            raise ApiError(
                405,
                "method_not_allowed",
                f"{request.method} is not allowed on {path}; it takes {', '.join(allowed)}",
                headers={"Allow": ", ".join(allowed)},
            )
        raise not_found(f"no endpoint {path}")

    for path, methods in _shadowed_paths(app.routes).items():
        others = [method for method in HTTP_METHODS if method not in methods]
        app.router.routes.insert(0, Route(path, unknown, methods=others, include_in_schema=False))
    for path in ("/api", "/api/{rest:path}"):
        app.add_route(path, unknown, methods=list(HTTP_METHODS), include_in_schema=False)


def _methods_of(routes: Sequence[BaseRoute], scope: Scope) -> list[str]:
    """The methods the endpoints at the request's path take. Where a fixed path and a
    pattern both match it (/api/sessions/changes and /api/sessions/{session_id}), the one
    with the fixed segment first wins: it is the endpoint that path names."""
    matching = [
        route
        for route in routes
        if isinstance(route, APIRoute) and route.matches(scope)[0] is not Match.NONE
    ]
    if not matching:
        return []
    best = min(_specificity(route.path) for route in matching)
    return sorted(
        {
            method
            for route in matching
            if _specificity(route.path) == best
            for method in route.methods or ()
        }
    )


def _specificity(path: str) -> tuple[bool, ...]:
    """A route path's segments, each True for a pattern and False for a fixed one: the
    smaller, the more specific."""
    return tuple(segment.startswith("{") for segment in path.split("/"))


def _shadowed_paths(routes: Sequence[BaseRoute]) -> dict[str, set[str]]:
    """The fixed endpoint paths a pattern's route would match too, with the methods their
    own endpoints take."""
    endpoints = [route for route in routes if isinstance(route, APIRoute)]
    shadowed: dict[str, set[str]] = {}
    for route in endpoints:
        if "{" in route.path:
            continue
        if any("{" in other.path and other.path_regex.match(route.path) for other in endpoints):
            shadowed.setdefault(route.path, set()).update(route.methods or ())
    return shadowed
