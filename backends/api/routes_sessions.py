"""The caller's sessions as records: listed (and followed as they change), created,
imported, read (with what the memory window holds of them), changed, deleted and exported.

    GET    /api/sessions?q=&limit=&offset=             -> {sessions: [record], ...}
    GET    /api/sessions/changes  (SSE, see `changes`)
    POST   /api/sessions          {agent?, model?, settings?, title?}  -> 201 {session}
    POST   /api/sessions/import   (an export document) -> 201 {session, summary, ...}
    GET    /api/sessions/{id}     ?limit=              -> {session, messages, state, ...}
    GET    /api/sessions/{id}/memory                   -> what the next model call is sent
    PATCH  /api/sessions/{id}     {title?, settings?, autochat?, agent?, model?}  (partial)
    DELETE /api/sessions/{id}                          -> 204 (its working folder too)
    GET    /api/sessions/{id}/export ?allow_unimportable=  -> the export, as an attachment
                                                          named after the chat's title

PATCH and create merge `settings` (and PATCH `autochat`) field by field into what the
session has (see `merged`); `settings.permissions` may name only tools the chat has (see
`check_permissions`); an import is untrusted (see `backends.api.app`).
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import logging
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import quote

from fastapi import FastAPI, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from backends.api.bodies import no_body, read_body, read_object, validate
from backends.api.changes import change_stream
from backends.api.context import ApiContext
from backends.api.errors import ApiError, describe_validation, shortened
from backends.api.openapi import errors
from backends.api.responses import (
    ImportAnswer,
    MemoryAnswer,
    SessionAnswer,
    SessionDetail,
    SessionList,
    send,
    success,
)
from backends.api.roles import with_role
from backends.api.sse import EventStreamResponse
from backends.api.strict import strictly
from gui_agent.export import (
    ExportDocument,
    encode_export,
    export_file_name,
    read_import,
    too_large_to_import,
)
from gui_agent.export_format import NotJson
from gui_agent.import_words import import_summary
from gui_agent.log_text import loggable
from schema import (
    PROTOCOL_VERSION,
    AgentName,
    AutoChatSettings,
    Message,
    SessionSettings,
)
from schema.requests import MAX_TITLE_CHARS

logger = logging.getLogger(__name__)

MAX_QUERY_CHARS = 200
PAGE_SIZE = 200
MAX_PAGE_SIZE = 1000
MAX_OFFSET = 1_000_000_000
"""Far past any real list, and well inside SQLite's 64-bit integers."""
CHANGES_PATH = "/api/sessions/changes"
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


def add_session_routes(app: FastAPI, api: ApiContext) -> None:
    auth, manager, bodies = api.auth, api.manager, api.bodies

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
        CHANGES_PATH,
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
                keepalive_s=api.keepalive_s,
                recheck=lambda: auth.owner(request, cookie=True),
                recheck_s=api.auth_recheck_s,
                closing=api.closing,
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
        raw = await read_object(request, api.max_body_bytes, optional=True)
        body = validate(CreateSession, with_role(raw, manager.architectures_factory()))
        settings = None
        if body.settings is not None:
            settings = merged(SessionSettings(), body.settings, "settings")
            # The tools the session will have: those the manager gives every new one.
            check_permissions(settings, SessionSettings(), manager.tools_factory().names)
        sent_model = settings.model if settings and "model" in (body.settings or {}) else None
        check_model(body.model, sent_model, manager.models.names())
        title = body.title if body.title and body.title.strip() else None
        interpreter = await manager.create(
            owner, agent=body.agent, model=body.model, settings=settings, title=title
        )
        return send(SessionAnswer(session=await api.record_of(interpreter)), 201)

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
        limit = api.max_import_bytes
        raw = await read_import_body(request, limit)
        with export_json_problems():
            imported = await asyncio.to_thread(read_import, raw, owner=owner, max_bytes=limit)
        record, messages = imported.record, imported.messages
        interpreter = await manager.import_session(record, messages)
        logger.info(
            "imported session %s for %s (%d messages)", record.id, loggable(owner), len(messages)
        )
        answer = ImportAnswer(
            session=await api.record_of(interpreter),
            message_count=len(messages),
            reset=list(imported.reset),
            repairs=imported.repairs.as_dict(),
            summary=import_summary(len(messages), imported.reset, imported.repairs),
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
        interpreter = await api.session_of(request, session_id)
        history: Sequence[Message] = interpreter.session.history
        if limit is not None:
            history = history[max(len(history) - limit, 0) :] if limit else []
        detail = SessionDetail(
            session=await api.record_of(interpreter),
            messages=list(history),
            message_count=len(interpreter.session.history),
            state=interpreter.state,
            busy=interpreter.busy,
            autochat_active=interpreter.autochat_active,
            pending_approvals=list(interpreter.pending_approvals),
            streaming=list(interpreter.streaming),
            running_calls=list(interpreter.running_calls),
            last_seq=interpreter.last_seq,
            epoch=api.epoch_of(interpreter),
            protocol_version=PROTOCOL_VERSION,
            allowed_tools=list(interpreter.allowed_tools),
            queued=list(interpreter.queued),
        )
        return send(detail)

    @app.get(
        "/api/sessions/{session_id}/memory",
        responses={
            **success(MemoryAnswer, "What the next model call would be sent of the history"),
            **errors(401, 404, 503),
        },
    )
    async def memory(request: Request, session_id: str) -> Response:
        """The memory window over the history as it stands: which messages the model would
        be sent next, their tokens, and AutoChat's goal (pinned when it slid out)."""
        interpreter = await api.session_of(request, session_id)
        window = interpreter.window()._asdict()  # the answer's fields are the window's
        return send(
            MemoryAnswer.model_validate({name: window[name] for name in MemoryAnswer.model_fields})
        )

    @app.patch(
        "/api/sessions/{session_id}",
        responses={
            **success(SessionAnswer, "The session as it is now"),
            **errors(400, 401, 404, 413, 415, 503),
        },
        openapi_extra=bodies.body(PatchSession),
    )
    async def patch_session(request: Request, session_id: str) -> Response:
        interpreter = await api.session_of(request, session_id)
        raw = await read_object(request, api.max_body_bytes)
        body = validate(PatchSession, with_role(raw, interpreter.architectures))
        session = interpreter.session
        settings: SessionSettings | None = None
        autochat: AutoChatSettings | None = None
        if body.settings is not None:
            settings = merged(session.settings, body.settings, "settings")
            check_permissions(settings, session.settings, interpreter.deps.tools.names)
        if body.autochat is not None:
            autochat = merged(session.autochat, body.autochat, "autochat")
        sent_model = settings.model if settings and "model" in (body.settings or {}) else None
        model = check_model(body.model, sent_model, manager.models.names())
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
        return send(SessionAnswer(session=await api.record_of(interpreter)))

    @app.delete(
        "/api/sessions/{session_id}",
        status_code=204,
        responses=errors(400, 401, 404, 413, 415, 503),
    )
    async def delete_session(request: Request, session_id: str) -> Response:
        interpreter = await api.session_of(request, session_id)
        await no_body(request)
        await manager.delete(interpreter.id, interpreter.session.owner)
        return Response(status_code=204)


def add_export_route(app: FastAPI, api: ApiContext) -> None:
    """GET /api/sessions/{id}/export (registered after the conversation's routes, where
    it has always been in the OpenAPI document)."""

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
        interpreter = await api.session_of(request, session_id)
        record = await api.record_of(interpreter)
        messages = list(interpreter.session.history)
        encoded = await asyncio.to_thread(
            encode_export, record, messages, max_bytes=api.max_import_bytes
        )
        if encoded.problem is not None:
            logger.warning("export of session %s: %s", record.id, loggable(encoded.problem))
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
            headers={"Content-Disposition": attachment(record.title, datetime.now(UTC))},
        )


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
    """`current` with the fields in `changes` replaced, validated as a whole, the changes
    strictly typed (`strictly`: `true` is no count, "0.5" no number); ApiError 400 naming
    the field for an unknown field or a value that does not validate."""
    model = type(current)
    unknown = sorted(set(changes) - set(model.model_fields))
    if unknown:
        raise ApiError(400, "invalid_request", f"{where}: unknown field(s) {', '.join(unknown)}")
    try:
        return strictly(model, {**current.model_dump(mode="json"), **changes})
    except ValidationError as exc:
        raise ApiError(400, "invalid_request", f"{where}.{describe_validation(exc)}") from None


def check_permissions(
    settings: SessionSettings, current: SessionSettings, tools: Sequence[str]
) -> None:
    """ApiError 400 when `settings.permissions` names a tool the chat does not have (a typo
    in a deny would leave the tool running), naming it, the closest tools and them all, as
    `PUT .../tools/{tool}` and `gui_agent.quick` refuse it. A name the chat already had a
    mode for (`current`) is kept: sending back the map as it was read never fails."""
    unknown = [
        name
        for name in settings.permissions
        if name not in tools and name not in current.permissions
    ]
    if not unknown:
        return
    name = unknown[0]
    close = difflib.get_close_matches(name, tools, n=3)
    hint = f" (did you mean {', '.join(map(repr, close))}?)" if close else ""
    raise ApiError(
        400,
        "invalid_request",
        f"settings.permissions: this chat has no tool {shortened(name)!r}{hint}; its tools: "
        f"{', '.join(tools) or 'none'}",
    )


async def read_import_body(request: Request, limit: int) -> bytes:
    """An import's (or a replay's) body, refused with 413 over `limit` in the words the page
    uses too, and as every endpoint refuses an empty body (`invalid_json`)."""
    declared = request.headers.get("content-length", "").strip()
    if declared.isdigit() and int(declared) > limit:
        raise ApiError(413, "too_large", too_large_to_import(int(declared), limit))
    try:
        raw = await read_body(request, limit)
    except ApiError as exc:
        if exc.status != 413:
            raise
        raise ApiError(413, "too_large", too_large_to_import(None, limit)) from None
    if not raw.strip():
        raise ApiError(400, "invalid_json", "the request body is empty; send an export document")
    return raw


@contextlib.contextmanager
def export_json_problems() -> Iterator[None]:
    """An export that is no JSON object answered as every endpoint answers a body that is
    not: 400 `invalid_json` (its message is the one the pages show for the file too)."""
    try:
        yield
    except NotJson as exc:
        raise ApiError(400, "invalid_json", str(exc)) from None


def attachment(title: str, at: datetime) -> str:
    """The export's Content-Disposition: the file named after the chat's title, in any
    script, as the front ends name it (`export_file_name`). A title that is not all ASCII
    goes in `filename*` (UTF-8, RFC 6266 and 8187), with `filename` its ASCII fallback for
    clients that read only that one: its accents taken off, anything else dropped."""
    name = export_file_name(title, at)
    if name.isascii():
        return f'attachment; filename="{name}"'
    plain = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii")
    fallback = export_file_name(plain, at)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quote(name, safe='')}"
