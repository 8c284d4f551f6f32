"""A session's events as Server-Sent Events: what a front end reads to follow a chat.

    GET /api/sessions/{id}/events   (ids <epoch>-<seq>; Last-Event-ID or ?since=&epoch=)

The stream opens with `hello` (where the session is: its state, open approvals, replies
being written, `last_seq`, and whether what was asked for can still be replayed), replays
what the client missed, then goes on live; it ends with `event: closed` when the caller's
access ends (see `sse`). An epoch names one run of sequence numbers (see `context`): a
resume point from another run is stale, and the client is told to load the session again.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request

from backends.api.context import ApiContext
from backends.api.openapi import errors
from backends.api.resume import RESUME_PARAMETERS, resume_point
from backends.api.sse import EventStreamResponse, event_stream
from schema import PROTOCOL_VERSION, Event

EVENTS_PATH = "/api/sessions/{session_id}/events"


def add_event_routes(app: FastAPI, api: ApiContext) -> None:
    auth = api.auth

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
            )
        )
