"""A chat's tools: how each one is treated, the mode a person sets for it, and the tools
allowed for the session.

    GET    /api/sessions/{id}/tools                       -> {tools: [...]}
    PUT    /api/sessions/{id}/tools/{tool}  {mode}        -> the tool, as it stands now
    DELETE /api/sessions/{id}/allowed-tools[?tool=NAME]   -> {allowed_tools}

`mode` is "ask", "allow", "deny", or null for what the app decides (a tool that changes
things asks first). It is kept with the chat's settings (`settings.permissions`), survives
a restart and is never imported. "Allow for this session", answered to an approval, lasts
until it is forgotten or the server restarts.
"""

from __future__ import annotations

from fastapi import FastAPI, Query, Request, Response
from pydantic import BaseModel, ConfigDict

from backends.api.bodies import no_body, read_object, validate
from backends.api.context import ApiContext
from backends.api.openapi import errors
from backends.api.responses import AllowedToolsAnswer, ToolInfo, ToolsAnswer, send, success
from schema import PermissionMode

MAX_TOOL_NAME_CHARS = 200


class ToolModeChange(BaseModel):
    """What a tool's calls do in this chat; null: what the app decides."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: PermissionMode | None


def add_tool_routes(app: FastAPI, api: ApiContext) -> None:
    @app.get(
        "/api/sessions/{session_id}/tools",
        responses={
            **success(ToolsAnswer, "The chat's tools and what a call of each does now"),
            **errors(401, 404, 503),
        },
    )
    async def tools(request: Request, session_id: str) -> Response:
        interpreter = await api.session_of(request, session_id)
        return send(ToolsAnswer(tools=[ToolInfo.of(s) for s in interpreter.tool_standings()]))

    @app.put(
        "/api/sessions/{session_id}/tools/{tool}",
        responses={
            **success(ToolInfo, "The tool as it stands now"),
            **errors(400, 401, 404, 413, 415, 503),
        },
        openapi_extra=api.bodies.body(ToolModeChange),
    )
    async def set_tool_mode(request: Request, session_id: str, tool: str) -> Response:
        """Set what a call of `tool` does in this chat; a tool the chat lacks is 400."""
        interpreter = await api.session_of(request, session_id)
        change = validate(ToolModeChange, await read_object(request, api.max_body_bytes))
        return send(ToolInfo.of(await interpreter.set_tool_mode(tool, change.mode)))

    @app.delete(
        "/api/sessions/{session_id}/allowed-tools",
        responses={
            **success(AllowedToolsAnswer, "The tools still allowed without asking"),
            **errors(400, 401, 404, 413, 415, 503),
        },
    )
    async def forget_allowed_tools(
        request: Request,
        session_id: str,
        tool: str | None = Query(None, min_length=1, max_length=MAX_TOOL_NAME_CHARS),
    ) -> Response:
        """Ask the person again before `tool` runs (every tool allowed for this session when
        no `tool` is given). A tool not allowed is no error: the answer lists what is."""
        interpreter = await api.session_of(request, session_id)
        await no_body(request)
        return send(AllowedToolsAnswer(allowed_tools=list(interpreter.forget_allowed_tools(tool))))
