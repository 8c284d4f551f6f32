"""The HTTP + SSE API: the contract Streamlit, React and scripts use to drive sessions.

`create_api(manager, tokens, ...)` returns a FastAPI app whose routes all live under `/api`
(the server mounts the Gradio page on the same app at `/`). Bodies are JSON, read with a
size cap and validated by the `schema.requests` models; the session id in the path wins
over one in the body. The OpenAPI document (with `docs`) describes each body from these
models (see `openapi`); reading and validating them stays here. Every endpoint but login,
logout and health needs a bearer token (the two event streams also take the login cookie,
for a browser's EventSource), and every session lookup is scoped to the token's user:
someone else's session is 404, like an unknown one. Bodies with fields an endpoint does
not define are refused (400), never silently trimmed. Each success body is a model from
`responses`, named in the OpenAPI document. Errors read `{"error": {"code": ...,
"message": ...}}` (see `errors`); a method an endpoint does not take is 405 with `Allow`,
an unknown path under /api 404; a well-formed request that clashes with what the session
is doing (a retry, edit or clear while a turn runs, a second answer to an approval) is 409
(see `conflicts`).

    POST   /api/login                                  -> {token, expires_at, user}
                                                          (and the login cookie, see `auth`)
    POST   /api/logout                                 -> 204, the login cookie removed
    GET    /api/health                                 -> {status, protocol_version, auth}
    GET    /api/models | /api/agents
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
    POST   /api/sessions/{id}/control   {action: retry|edit_last|clear, text?, images?}
    GET    /api/sessions/{id}/events    (SSE, ids <epoch>-<seq>; Last-Event-ID or ?since=&epoch=;
                                        ends with `event: closed` when access ends, see `sse`)
    GET    /api/sessions/{id}/export    ?allow_unimportable=  -> the export document, as an
                                        attachment; 413 when it could not be imported back
                                        (over `max_import_bytes`)
    POST   /api/sessions/import         (body: an export document)
                                        -> 201 {session, message_count, reset, repairs}

PATCH changes only what it is sent: `settings` and `autochat` are merged field by field into
the session's current ones (a field sent replaces that field; `permissions` is one field, so
it is replaced as a whole map), the result is validated, and unknown fields are refused.
Creating a session merges `settings` into the defaults the same way.

An import is untrusted: it never carries tool permissions or a running AutoChat. `reset`
in the answer lists what the document held and the new session does not
(`settings.permissions`, `autochat.enabled`). `repairs` counts what was changed so the
history can be sent to any model (see `gui_agent.export`): tool results answering no call
dropped, calls without a result answered, SYSTEM messages kept as display-only notes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import weakref
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from fastapi import FastAPI, Query, Request, Response
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from starlette.routing import Match

from backends.api.auth import (
    Authenticator,
    LoginBody,
    LoginThrottles,
    clear_token_cookie,
    set_token_cookie,
)
from backends.api.bodies import (
    MAX_MESSAGE_BODY_BYTES,
    check_images,
    read_body,
    read_object,
    validate,
)
from backends.api.changes import change_stream
from backends.api.conflicts import approval_closed, edit_in_progress, turn_running
from backends.api.errors import ApiError, describe_validation, install_error_handlers, not_found
from backends.api.openapi import RequestBodies, errors
from backends.api.responses import (
    AgentEntry,
    AgentsAnswer,
    ApprovalAnswer,
    Cleared,
    HealthAnswer,
    ImportAnswer,
    LoginAnswer,
    MessageAccepted,
    ModelEntry,
    ModelsAnswer,
    SessionAnswer,
    SessionDetail,
    SessionList,
    StopAnswer,
    TurnStarted,
    send,
    success,
)
from backends.api.resume import RESUME_PARAMETERS, resume_point
from backends.api.sse import DEFAULT_RECHECK_S, EventStreamResponse, event_stream
from gui_agent.auth import ProxyHeaderAuth, TokenService, UserDB
from gui_agent.exceptions import ConfigError
from gui_agent.export import (
    MAX_IMPORT_BYTES,
    ExportDocument,
    encode_export,
    read_import,
    too_large_to_import,
)
from gui_agent.interpreter import Interpreter
from gui_agent.manager import SessionManager
from schema import (
    PROTOCOL_VERSION,
    AgentName,
    ApprovalResponse,
    AutoChatSettings,
    ChatRequest,
    ControlRequest,
    Event,
    InterpreterState,
    Message,
    SessionRecord,
    SessionSettings,
)
from schema.requests import MAX_TITLE_CHARS

logger = logging.getLogger(__name__)

DEFAULT_MAX_BODY_BYTES = MAX_MESSAGE_BODY_BYTES
"""The largest JSON body accepted: a message with every image and all the text a message
may carry (see `bodies.MAX_MESSAGE_BODY_BYTES`); imports have their own cap."""
DEFAULT_KEEPALIVE_S = 15.0
DEFAULT_AUTH_RECHECK_S = DEFAULT_RECHECK_S
"""How often an open event stream checks its token is still good and its user still in
the users file: a removed user's streams end within this many seconds."""
MAX_SESSION_ID_CHARS = 128
MAX_QUERY_CHARS = 200
PAGE_SIZE = 200
MAX_PAGE_SIZE = 1000
MAX_OFFSET = 1_000_000_000
"""Far past any real list, and well inside SQLite's 64-bit integers."""
SETTLE_TIMEOUT_S = 5.0
HTTP_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE")
_S = TypeVar("_S", SessionSettings, AutoChatSettings)


class CreateSession(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    agent: AgentName | None = None
    model: str | None = None
    settings: dict[str, Any] | None = None
    title: str | None = Field(default=None, max_length=MAX_TITLE_CHARS)


class PatchSession(BaseModel):
    """A partial update: `settings` and `autochat` hold only the fields to change."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    title: str | None = Field(default=None, max_length=MAX_TITLE_CHARS)
    settings: dict[str, Any] | None = None
    autochat: dict[str, Any] | None = None
    agent: AgentName | None = None
    model: str | None = None


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
    docs: bool = False,
    throttles: LoginThrottles | None = None,
    closing: asyncio.Event | None = None,
) -> FastAPI:
    """The API app over `manager`. `users` enables password login, `proxy` the trusted
    header; with neither, login issues a token for "local" (loopback development).
    `docs` serves the OpenAPI schema and pages under /api/docs. `throttles` counts failed
    logins (pass the page's, so both count together). An open event stream checks its
    caller's access again every `auth_recheck_s` seconds. `closing`, once set (the server
    is shutting down), ends the chats-list streams; session streams end as their sessions
    close."""
    if auth_recheck_s <= 0:
        raise ConfigError(f"auth_recheck_s must be positive, not {auth_recheck_s}")
    auth = Authenticator(
        tokens=tokens, users=users, proxy=proxy, throttles=throttles or LoginThrottles()
    )
    app = FastAPI(
        title="GuiAgent API",
        version=PROTOCOL_VERSION,
        docs_url="/api/docs" if docs else None,
        redoc_url=None,
        openapi_url="/api/openapi.json" if docs else None,
    )
    install_error_handlers(app)
    bodies = RequestBodies()

    # Sequence numbers restart when a session's interpreter is rebuilt (a server restart,
    # or an idle session released from memory); an epoch names one run of numbers.
    epochs: weakref.WeakKeyDictionary[Interpreter, str] = weakref.WeakKeyDictionary()
    # One retry, edit or clear at a time per session: a second one (a double click) is 409.
    edit_locks: weakref.WeakKeyDictionary[Interpreter, asyncio.Lock] = weakref.WeakKeyDictionary()

    def epoch_of(interpreter: Interpreter) -> str:
        return epochs.setdefault(interpreter, secrets.token_hex(8))

    async def session_of(request: Request, session_id: str, *, cookie: bool = False) -> Interpreter:
        owner = await auth.owner(request, cookie=cookie)
        if not session_id or len(session_id) > MAX_SESSION_ID_CHARS:
            raise not_found()
        return await manager.get(session_id, owner)

    async def record_of(interpreter: Interpreter) -> SessionRecord:
        live = interpreter.session.to_record(interpreter.state)
        stored = await manager.store.get_session(interpreter.id, owner=interpreter.session.owner)
        if stored is None:
            return live
        return live.model_copy(
            update={"created_at": stored.created_at, "updated_at": stored.updated_at}
        )

    # -- who, and what is on offer ----------------------------------------------------------

    @app.post(
        "/api/login",
        responses={
            **success(LoginAnswer, "A bearer token for the other endpoints"),
            **errors(400, 401, 413, 415, 429, 503),
        },
        openapi_extra=bodies.body(
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
        responses={204: {"description": "The login cookie is removed"}},
    )
    async def logout(request: Request) -> Response:
        """Remove the login cookie the event streams accept (a bearer token stays valid
        until it expires)."""
        return clear_token_cookie(Response(status_code=204), secure=request.url.scheme == "https")

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
        return send(ModelsAnswer(default=default, models=entries, notice=notice))

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

    # -- sessions ---------------------------------------------------------------------------

    @app.get(
        "/api/sessions",
        responses={
            **success(SessionList, "The caller's sessions, most recently used first"),
            **errors(400, 401, 503),
        },
    )
    async def list_sessions(
        request: Request,
        q: str | None = None,
        limit: int = Query(PAGE_SIZE, ge=1, le=MAX_PAGE_SIZE),
        offset: int = Query(0, ge=0, le=MAX_OFFSET),
    ) -> Response:
        owner = await auth.owner(request)
        query = q.strip()[:MAX_QUERY_CHARS] if q and q.strip() else None
        records = await manager.store.list_sessions(owner, query=query, limit=limit, offset=offset)
        return send(SessionList(sessions=list(records), limit=limit, offset=offset))

    @app.get(
        "/api/sessions/changes",
        status_code=200,
        response_class=EventStreamResponse,
        responses={
            200: {
                "description": "The caller's chats created, imported, renamed or deleted, "
                "as Server-Sent Events (see `changes`)"
            },
            **errors(401, 503),
        },
    )
    async def session_changes(request: Request) -> EventStreamResponse:
        owner = await auth.owner(request, cookie=True)
        return EventStreamResponse(
            change_stream(
                manager.changes,
                owner,
                keepalive_s=keepalive_s,
                recheck=lambda: auth.owner(request, cookie=True),
                recheck_s=auth_recheck_s,
                closing=closing,
            )
        )

    @app.post(
        "/api/sessions",
        status_code=201,
        responses={
            **success(SessionAnswer, "The new session", 201),
            **errors(400, 401, 413, 415, 503),
        },
        openapi_extra=bodies.body(CreateSession, required=False),
    )
    async def create_session(request: Request) -> Response:
        owner = await auth.owner(request)
        body = validate(CreateSession, await read_object(request, max_body_bytes, optional=True))
        settings = None
        if body.settings is not None:
            settings = merged(SessionSettings(), body.settings, "settings")
        sent_model = settings.model if settings and "model" in (body.settings or {}) else None
        check_model(body.model, sent_model, manager.models.names())
        if body.agent is not None and body.agent not in manager.architectures_factory():
            raise ApiError(400, "invalid_request", f"no agent role {body.agent.value!r} here")
        title = body.title if body.title and body.title.strip() else None
        interpreter = await manager.create(
            owner, agent=body.agent, model=body.model, settings=settings, title=title
        )
        return send(SessionAnswer(session=await record_of(interpreter)), 201)

    @app.post(
        "/api/sessions/import",
        status_code=201,
        responses={
            **success(ImportAnswer, "The new session made from the document", 201),
            **errors(400, 401, 413, 415, 503),
        },
        openapi_extra=bodies.body(ExportDocument, description="A session export document."),
    )
    async def import_(request: Request) -> Response:
        owner = await auth.owner(request)
        raw = await _read_import_body(request, max_import_bytes)
        imported = await asyncio.to_thread(
            read_import, raw, owner=owner, max_bytes=max_import_bytes
        )
        record, messages = imported.record, imported.messages
        interpreter = await manager.import_session(record, messages)
        logger.info("imported session %s for %s (%d messages)", record.id, owner, len(messages))
        answer = ImportAnswer(
            session=await record_of(interpreter),
            message_count=len(messages),
            reset=list(imported.reset),
            repairs=imported.repairs.as_dict(),
        )
        return send(answer, 201)

    @app.get(
        "/api/sessions/{session_id}",
        responses={
            **success(SessionDetail, "The session, its messages and what it is doing"),
            **errors(400, 401, 404, 503),
        },
    )
    async def get_session(
        request: Request, session_id: str, limit: int | None = Query(None, ge=0)
    ) -> Response:
        interpreter = await session_of(request, session_id)
        history: Sequence[Message] = interpreter.session.history
        if limit is not None:
            history = history[len(history) - limit :] if limit else []
        detail = SessionDetail(
            session=await record_of(interpreter),
            messages=list(history),
            message_count=len(interpreter.session.history),
            state=interpreter.state,
            busy=interpreter.busy,
            pending_approvals=list(interpreter.pending_approvals),
            streaming=list(interpreter.streaming),
            last_seq=interpreter.last_seq,
            epoch=epoch_of(interpreter),
            protocol_version=PROTOCOL_VERSION,
        )
        return send(detail)

    @app.patch(
        "/api/sessions/{session_id}",
        responses={
            **success(SessionAnswer, "The session as it is now"),
            **errors(400, 401, 404, 413, 415, 503),
        },
        openapi_extra=bodies.body(PatchSession),
    )
    async def patch_session(request: Request, session_id: str) -> Response:
        interpreter = await session_of(request, session_id)
        body = validate(PatchSession, await read_object(request, max_body_bytes))
        session = interpreter.session
        settings: SessionSettings | None = None
        autochat: AutoChatSettings | None = None
        if body.settings is not None:
            settings = merged(session.settings, body.settings, "settings")
        if body.autochat is not None:
            autochat = merged(session.autochat, body.autochat, "autochat")
        sent_model = settings.model if settings and "model" in (body.settings or {}) else None
        model = check_model(body.model, sent_model, manager.models.names())
        if body.agent is not None and body.agent not in interpreter.architectures:
            raise ApiError(400, "invalid_request", f"no agent role {body.agent.value!r} here")
        if settings is not None or autochat is not None or body.title is not None:
            if settings is not None:  # the model changes through set_model below
                settings = settings.model_copy(update={"model": session.settings.model})
            await manager.update(
                interpreter, settings=settings, autochat=autochat, title=body.title
            )
        if body.agent is not None:
            await interpreter.set_agent(body.agent)
        if model is not None and model != interpreter.session.settings.model:
            await manager.set_model(interpreter, model)
        return send(SessionAnswer(session=await record_of(interpreter)))

    @app.delete("/api/sessions/{session_id}", status_code=204, responses=errors(401, 404, 503))
    async def delete_session(request: Request, session_id: str) -> Response:
        interpreter = await session_of(request, session_id)
        await manager.delete(interpreter.id, interpreter.session.owner)
        return Response(status_code=204)

    # -- a conversation ---------------------------------------------------------------------

    @app.post(
        "/api/sessions/{session_id}/messages",
        status_code=202,
        responses={
            **success(MessageAccepted, "The message was taken: it starts a turn, or waits", 202),
            **errors(400, 401, 404, 413, 415, 503),
        },
        openapi_extra=bodies.body(ChatRequest, from_path=["session_id"]),
    )
    async def send_message(request: Request, session_id: str) -> Response:
        interpreter = await session_of(request, session_id)
        chat = validate(
            ChatRequest, await read_object(request, max_body_bytes), session_id=session_id
        )
        images = check_images(chat.images)
        message = await interpreter.send(chat.text, images=images, agent=chat.agent)
        # Queued is where it went, not whether a turn ran before: a turn may end while the
        # agent switch is saved, and a message sent during a retry or edit waits for it.
        queued = any(waiting is message for waiting in interpreter.session.inbox)
        return send(MessageAccepted(message_id=message.id, queued=queued), 202)

    @app.post(
        "/api/sessions/{session_id}/stop",
        responses={
            **success(StopAnswer, "The running turn (if any) ended, its reply kept"),
            **errors(401, 404, 503),
        },
    )
    async def stop(request: Request, session_id: str) -> Response:
        interpreter = await session_of(request, session_id)
        return send(StopAnswer(stopped=await interpreter.stop()))

    @app.post(
        "/api/sessions/{session_id}/approvals/{approval_id}",
        responses={
            **success(ApprovalAnswer, "The answer was taken; the turn goes on"),
            **errors(400, 401, 404, 409, 413, 415, 503),
        },
        openapi_extra=bodies.body(ApprovalResponse, from_path=["session_id", "approval_id"]),
    )
    async def approve(request: Request, session_id: str, approval_id: str) -> Response:
        interpreter = await session_of(request, session_id)
        answer = validate(
            ApprovalResponse,
            await read_object(request, max_body_bytes),
            session_id=session_id,
            approval_id=approval_id,
        )
        if not interpreter.approve(answer.approval_id, answer.decision, answer.note):
            raise approval_closed(interpreter, answer.approval_id)
        return send(ApprovalAnswer(approval_id=answer.approval_id, decision=answer.decision))

    @app.post(
        "/api/sessions/{session_id}/control",
        responses={
            **success(Cleared, "clear: the conversation was cleared"),
            **success(TurnStarted, "retry or edit_last: the new turn started", 202),
            **errors(400, 401, 404, 409, 413, 415, 503),
        },
        openapi_extra=bodies.body(ControlRequest, from_path=["session_id"]),
    )
    async def control(request: Request, session_id: str) -> Response:
        interpreter = await session_of(request, session_id)
        command = validate(
            ControlRequest, await read_object(request, max_body_bytes), session_id=session_id
        )
        if command.action != "edit_last" and (command.text is not None or command.images):
            raise ApiError(
                400,
                "invalid_request",
                f"'text' and 'images' go with edit_last, not {command.action}",
            )
        images = check_images(command.images)
        if command.action == "edit_last" and command.text is None and not images:
            raise ApiError(400, "invalid_request", "edit_last needs the new text in 'text'")
        lock = edit_locks.setdefault(interpreter, asyncio.Lock())
        if lock.locked():
            raise edit_in_progress()
        async with lock:
            await _settle(interpreter)
            if interpreter.busy:
                raise turn_running(request.url.path.removesuffix("/control"))
            if command.action == "clear":
                await interpreter.clear()
                return send(Cleared())
            if command.action == "retry":
                message = await interpreter.retry()
            else:
                message = await interpreter.edit_last(command.text or "", images=images)
        return send(TurnStarted(action=command.action, message_id=message.id), 202)

    @app.get(
        "/api/sessions/{session_id}/events",
        status_code=200,
        response_class=EventStreamResponse,
        responses={
            200: {"description": "The session's events as Server-Sent Events (see `sse`)"},
            **errors(400, 401, 404, 503),
        },
        openapi_extra={"parameters": RESUME_PARAMETERS},
    )
    async def events(request: Request, session_id: str) -> EventStreamResponse:
        interpreter = await session_of(request, session_id, cookie=True)
        since, id_epoch = resume_point(request)
        epoch = epoch_of(interpreter)
        client_epoch = id_epoch or request.query_params.get("epoch")
        stale = since is not None and client_epoch is not None and client_epoch != epoch

        def hello(replay: Sequence[Event], complete: bool) -> dict[str, Any]:
            return {
                "protocol_version": PROTOCOL_VERSION,
                "session_id": interpreter.id,
                "epoch": epoch,
                "state": interpreter.state.value,
                "busy": interpreter.busy,
                "last_seq": interpreter.last_seq,
                "replayed": len(replay),
                "resync": not complete,
                "pending_approvals": [
                    a.model_dump(mode="json") for a in interpreter.pending_approvals
                ],
                "streaming": [m.model_dump(mode="json") for m in interpreter.streaming],
            }

        return EventStreamResponse(
            event_stream(
                interpreter,
                since=since,
                epoch=epoch,
                keepalive_s=keepalive_s,
                hello=hello,
                stale=stale,
                recheck=lambda: auth.owner(request, cookie=True),
                recheck_s=auth_recheck_s,
            )
        )

    # -- files ------------------------------------------------------------------------------

    @app.get(
        "/api/sessions/{session_id}/export",
        responses={
            **success(ExportDocument, "The export document, as an attachment"),
            **errors(400, 401, 404, 413, 503),
        },
    )
    async def export(
        request: Request, session_id: str, allow_unimportable: bool = False
    ) -> Response:
        """413 when the document could not be imported back (its size, or its number of
        messages, is over what an import takes), naming both; `allow_unimportable=true`
        sends it anyway."""
        interpreter = await session_of(request, session_id)
        record = await record_of(interpreter)
        messages = list(interpreter.session.history)
        encoded = await asyncio.to_thread(
            encode_export, record, messages, max_bytes=max_import_bytes
        )
        if encoded.problem is not None:
            logger.warning("export of session %s: %s", record.id, encoded.problem)
            if not allow_unimportable:
                raise ApiError(
                    413 if encoded.too_large else 400,
                    "too_large" if encoded.too_large else "not_importable",
                    f"this chat could not be imported back: {encoded.problem}; add "
                    "?allow_unimportable=true to download it anyway",
                )
        return Response(
            encoded.data,
            media_type="application/json",
            headers={"Content-Disposition": _attachment(interpreter.id)},
        )

    async def unknown(request: Request) -> Response:
        """Anything else under /api, whatever the method: 405 naming the methods the path
        takes, or 404; in the API's error shape either way (never the page's)."""
        allowed = sorted(
            {
                method
                for route in app.routes
                if isinstance(route, APIRoute) and route.matches(request.scope)[0] is Match.PARTIAL
                for method in route.methods or ()
            }
        )
        if allowed:
            raise ApiError(
                405,
                "method_not_allowed",
                f"{request.method} is not allowed on {request.url.path}; it takes "
                f"{', '.join(allowed)}",
                headers={"Allow": ", ".join(allowed)},
            )
        raise not_found(f"no endpoint {request.url.path}")

    for path in ("/api", "/api/{rest:path}"):
        app.add_route(path, unknown, methods=list(HTTP_METHODS), include_in_schema=False)
    bodies.install(
        app,
        public=("/api/login", "/api/logout", "/api/health"),
        cookie=("/api/sessions/changes", "/api/sessions/{session_id}/events"),
    )

    return app


async def _settle(interpreter: Interpreter) -> None:
    """Let a turn that has already ended (the client saw STOP) finish saving.

    The interpreter publishes STOP before its run task returns, so a retry sent the moment
    a client sees STOP would otherwise be refused as "a turn is running".
    """
    finishing = interpreter.state is InterpreterState.STOP and not interpreter.autochat_active
    if interpreter.busy and finishing:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(SETTLE_TIMEOUT_S):
                await interpreter.wait_idle()


def check_model(model: str | None, in_settings: str | None, names: Sequence[str]) -> str | None:
    """The model a create or PATCH names (`model`, or `settings.model`), if any; ApiError
    400 when the two name different models or it is not configured (an empty name too:
    it is never taken as "no change" or "the default")."""
    if model is not None and in_settings is not None and model != in_settings:
        raise ApiError(400, "invalid_request", "'model' and 'settings.model' name different models")
    chosen = model if model is not None else in_settings
    if chosen is not None and chosen not in names:
        raise ApiError(400, "invalid_request", f"unknown model {chosen!r}; see GET /api/models")
    return chosen


def merged(current: _S, changes: Mapping[str, Any], where: str) -> _S:
    """`current` with the fields in `changes` replaced, validated as a whole; ApiError 400
    naming the field for an unknown field or a value that does not validate."""
    model = type(current)
    unknown = sorted(set(changes) - set(model.model_fields))
    if unknown:
        raise ApiError(400, "invalid_request", f"{where}: unknown field(s) {', '.join(unknown)}")
    try:
        return model.model_validate({**current.model_dump(), **changes})
    except ValidationError as exc:
        raise ApiError(400, "invalid_request", f"{where}.{describe_validation(exc)}") from None


async def _read_import_body(request: Request, limit: int) -> bytes:
    """An import's body, refused with 413 over `limit` in the words the page uses too."""
    declared = request.headers.get("content-length", "").strip()
    if declared.isdigit() and int(declared) > limit:
        raise ApiError(413, "too_large", too_large_to_import(int(declared), limit))
    try:
        return await read_body(request, limit)
    except ApiError as exc:
        if exc.status != 413:
            raise
        raise ApiError(413, "too_large", too_large_to_import(None, limit)) from None


def _attachment(session_id: str) -> str:
    """The export's Content-Disposition: a file named after the session id."""
    name = "".join(c if c.isascii() and (c.isalnum() or c in "_.-") else "_" for c in session_id)
    return f'attachment; filename="gui-agent-session-{name}.json"'
