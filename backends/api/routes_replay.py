"""POST /api/sessions/replay: an export's events in order, for a front end to show the chat
step by step as it went (the chat page's "Replay a JSON export"). Nothing is saved: a replay
is not a session. The document is read as an import reads it (its size, its JSON, its format,
each message and recorded event checked), so the two refuse the same files in the same words,
but that a replay names the file "the replay file" where an import says "the import".
"""

from __future__ import annotations

import asyncio

from fastapi import FastAPI, Request, Response

from backends.api.context import ApiContext
from backends.api.openapi import JSON, errors
from backends.api.responses import ReplayAnswer, success
from backends.api.routes_sessions import export_json_problems, read_import_body
from gui_agent.export import ExportDocument, read_replay

__all__ = ["REPLAY_PATH", "add_replay_route"]

REPLAY_PATH = "/api/sessions/replay"


def add_replay_route(app: FastAPI, api: ApiContext) -> None:
    @app.post(
        REPLAY_PATH,
        responses={
            **success(ReplayAnswer, "The export's events in order (nothing is saved)"),
            **errors(400, 401, 413, 415, 503),
        },
        openapi_extra=api.bodies.body(ExportDocument, description="A session export document."),
    )
    async def replay(request: Request) -> Response:
        await api.auth.owner(request)
        limit = api.max_import_bytes
        raw = await read_import_body(request, limit)
        # Read and encoded off the event loop: an export can be tens of megabytes.
        with export_json_problems():
            answer = await asyncio.to_thread(replayed, raw, limit)
        return Response(answer, media_type=JSON)


def replayed(raw: bytes, limit: int) -> str:
    """The answer (a `ReplayAnswer`, as JSON) for an export's bytes; InvalidRequest (400)
    when an import would refuse them."""
    replay = read_replay(raw, max_bytes=limit)
    answer = ReplayAnswer(
        title=replay.title, message_count=replay.message_count, events=replay.events
    )
    return answer.model_dump_json()
