"""Where a client's event stream resumes: `Last-Event-ID` (what a browser's EventSource
sends on reconnect) or `?since=` with `?epoch=`, and how the OpenAPI document describes
them. Event ids are `<epoch>-<seq>` (see `sse`)."""

from __future__ import annotations

import re
from typing import Any

from fastapi import Request

from backends.api.errors import ApiError

MAX_SEQ_DIGITS = 30
_EVENT_ID = re.compile(rf"(?:(?P<epoch>[0-9a-f]{{16}})-)?(?P<seq>[0-9]{{1,{MAX_SEQ_DIGITS}}})")
_SEQ = {"type": "string", "pattern": "^([0-9a-f]{16}-)?[0-9]{1,30}$"}
RESUME_PARAMETERS: list[dict[str, Any]] = [
    {
        "name": "Last-Event-ID",
        "in": "header",
        "required": False,
        "schema": _SEQ,
        "description": "The id of the last event seen (<epoch>-<seq>); wins over `since`.",
    },
    {
        "name": "since",
        "in": "query",
        "required": False,
        "schema": _SEQ,
        "description": "Replay the buffered events after this seq (or event id).",
    },
    {
        "name": "epoch",
        "in": "query",
        "required": False,
        "schema": {"type": "string"},
        "description": "The epoch `since` belongs to; another one means: reload.",
    },
]


def resume_point(request: Request) -> tuple[int | None, str | None]:
    """The last event the client saw, and the epoch it came from when the client says:
    `Last-Event-ID` (sent by EventSource on reconnect; our ids are `<epoch>-<seq>`) wins
    over `?since=`; (None, None) when neither is given (live events only). A seq is ASCII
    digits only (`str.isdigit` would take "²" and Arabic-Indic digits), at most 30."""
    raw = request.headers.get("last-event-id") or request.query_params.get("since")
    if raw is None or not raw.strip():
        return None, None
    found = _EVENT_ID.fullmatch(raw.strip())
    if found is None:
        raise ApiError(
            400,
            "invalid_request",
            f"Last-Event-ID / since must be an event id (<epoch>-<seq>) or a seq number (up "
            f"to {MAX_SEQ_DIGITS} digits 0-9)",
        )
    return int(found["seq"]), found["epoch"]
