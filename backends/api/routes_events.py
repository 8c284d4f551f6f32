"""A session's events as Server-Sent Events: what a front end reads to follow a chat.

    GET /api/sessions/{id}/events   (ids <epoch>-<seq>; Last-Event-ID or ?since=&epoch=)

The stream opens with `hello` (where the session is: its state, open approvals, replies
being written, `last_seq`, and whether what was asked for can still be replayed), replays
what the client missed, then goes on live; it ends with `event: closed` when the caller's
access ends (`unauthorized`) or the chat is deleted (`not_found`; see `sse`). An epoch
names one run of sequence numbers (see `context`): a resume point from another run is
stale, and the client is told to load the session again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request

from backends.api.context import ApiContext
from backends.api.errors import not_found
from backends.api.openapi import errors
from backends.api.resume import RESUME_PARAMETERS, resume_point
from backends.api.sse import EventStreamResponse, event_stream
from gui_agent.exceptions import StoreError
from gui_agent.log_text import loggable
from gui_agent.manager import SessionNotFound
from schema import PROTOCOL_VERSION, Event

logger = logging.getLogger(__name__)

EVENTS_PATH = "/api/sessions/{session_id}/events"
DELETED = "this chat was deleted; its events end here"
"""Why a deleted chat's event streams end (their `closed` event, code `not_found`)."""


def add_event_routes(app: FastAPI, api: ApiContext) -> None:
    auth = api.auth

    async def still_there(session_id: str, owner: str) -> None:
        """Once a session closed under its stream: return when it can still be opened,
        raise 404 `DELETED` when it is gone. The lookup waits for a delete that is under way
        (`SessionManager.get`), so the answer is never read half-way through one. A server
        shutting down closes every session and deletes none: nothing is looked up then."""
        if api.closing is not None and api.closing.is_set():
            return
        try:
            await api.manager.get(session_id, owner)
        except SessionNotFound:
            raise not_found(DELETED) from None
        except StoreError as exc:  # (the store closed under it: the server is stopping)
            logger.debug("session %s closed; not looked up again: %s", session_id, loggable(exc))

    @app.get(
        EVENTS_PATH,
        status_code=200,
        response_class=EventStreamResponse,
        responses={
            200: {"description": "The session's events as Server-Sent Events (see `sse`)"},
            **errors(400, 401, 404, 503),
        },
        openapi_extra={"parameters": RESUME_PARAMETERS},
    )
    async def events(request: Request, session_id: str) -> EventStreamResponse:
        interpreter = await api.session_of(request, session_id, cookie=True)
        since, id_epoch = resume_point(request)
        epoch = api.epoch_of(interpreter)
        client_epoch = id_epoch or request.query_params.get("epoch")
        stale = since is not None and client_epoch is not None and client_epoch != epoch

        def hello(replay: Sequence[Event], complete: bool) -> dict[str, Any]:
            return {
                "protocol_version": PROTOCOL_VERSION,
                "session_id": interpreter.id,
                "epoch": epoch,
                "state": interpreter.state.value,
                "busy": interpreter.busy,
                "autochat_active": interpreter.autochat_active,
                "last_seq": interpreter.last_seq,
                "replayed": len(replay),
                "resync": not complete,
                "pending_approvals": [
                    a.model_dump(mode="json") for a in interpreter.pending_approvals
                ],
                "streaming": [m.model_dump(mode="json") for m in interpreter.streaming],
                "running_calls": [c.model_dump(mode="json") for c in interpreter.running_calls],
            }

        return EventStreamResponse(
            event_stream(
                interpreter,
                since=since,
                epoch=epoch,
                keepalive_s=api.keepalive_s,
                hello=hello,
                stale=stale,
                recheck=lambda: auth.owner(request, cookie=True),
                recheck_s=api.auth_recheck_s,
                gone=lambda: still_there(interpreter.id, interpreter.session.owner),
            )
        )
