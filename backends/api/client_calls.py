"""What each request of the API clients sends, and how its answer reads, without I/O.

One function per endpoint builds a `Call`: the method, the path (relative to the base URL,
each id one path segment), the JSON body, the query, and how to read the success answer.
`GuiAgentClient` sends calls with `httpx.Client`, `AsyncGuiAgentClient` with
`httpx.AsyncClient`; what is sent and what comes back is decided here, once for both.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Generic, TypeVar

import httpx

from backends.api.client_wire import json_body, parse, segment, session_path
from backends.api.responses import (
    AgentsAnswer,
    AllowedToolsAnswer,
    ApprovalAnswer,
    HealthAnswer,
    ImportAnswer,
    LoginAnswer,
    MemoryAnswer,
    MessageAccepted,
    ModelsAnswer,
    ReplayAnswer,
    SessionAnswer,
    SessionDetail,
    SessionList,
    StopAnswer,
    ToolInfo,
    ToolsAnswer,
    TurnStarted,
)
from schema import AgentName, ApprovalDecision, ImagePart, PermissionMode, SessionRecord

_R = TypeVar("_R")

Params = Mapping[str, str | int | None]


@dataclass(frozen=True, slots=True)
class Call(Generic[_R]):
    """One request, and what its success answer's body means (`read`)."""

    method: str
    path: str
    read: Callable[[bytes], _R]
    body: bytes | None = None
    params: Params = field(default_factory=dict)

    def request(self, http: httpx.Client | httpx.AsyncClient) -> httpx.Request:
        """The request, for `http` to send (parameters that are None are left out)."""
        headers = {"Content-Type": "application/json"} if self.body is not None else None
        query = {k: v for k, v in self.params.items() if v is not None}
        return http.build_request(
            self.method, self.path, content=self.body, params=query, headers=headers
        )


def _nothing(_: bytes) -> None:
    return None


def _as_is(data: bytes) -> bytes:
    return data


def _session(data: bytes) -> SessionRecord:
    return parse(SessionAnswer, data).session


def _stopped(data: bytes) -> bool:
    return parse(StopAnswer, data).stopped


def _still_allowed(data: bytes) -> list[str]:
    return parse(AllowedToolsAnswer, data).allowed_tools


# -- who, and what is on offer -----------------------------------------------------------


def health() -> Call[HealthAnswer]:
    return Call("GET", "api/health", partial(parse, HealthAnswer))


def login(username: str | None, password: str | None) -> Call[LoginAnswer]:
    body = json_body(username=username, password=password) if username is not None else None
    return Call("POST", "api/login", partial(parse, LoginAnswer), body)


def logout() -> Call[None]:
    return Call("POST", "api/logout", _nothing)


def models() -> Call[ModelsAnswer]:
    return Call("GET", "api/models", partial(parse, ModelsAnswer))


def agents() -> Call[AgentsAnswer]:
    return Call("GET", "api/agents", partial(parse, AgentsAnswer))


# -- sessions ----------------------------------------------------------------------------


def list_sessions(query: str | None, limit: int | None, offset: int) -> Call[SessionList]:
    params = {"q": query, "limit": limit, "offset": offset}
    return Call("GET", "api/sessions", partial(parse, SessionList), params=params)


def create_session(
    agent: AgentName | str | None,
    model: str | None,
    settings: Mapping[str, Any] | None,
    title: str | None,
) -> Call[SessionRecord]:
    body = json_body(agent=agent, model=model, settings=settings, title=title)
    return Call("POST", "api/sessions", _session, body)


def get_session(session_id: str, limit: int | None) -> Call[SessionDetail]:
    path = session_path(session_id)
    return Call("GET", path, partial(parse, SessionDetail), params={"limit": limit})


def memory(session_id: str) -> Call[MemoryAnswer]:
    return Call("GET", session_path(session_id, "memory"), partial(parse, MemoryAnswer))


def _tools(data: bytes) -> list[ToolInfo]:
    return parse(ToolsAnswer, data).tools


def tools(session_id: str) -> Call[list[ToolInfo]]:
    return Call("GET", session_path(session_id, "tools"), _tools)


def set_tool_mode(session_id: str, tool: str, mode: PermissionMode | str | None) -> Call[ToolInfo]:
    path = session_path(session_id, "tools", segment(tool))
    body = json.dumps({"mode": None if mode is None else str(mode)}).encode()
    return Call("PUT", path, partial(parse, ToolInfo), body)


def forget_allowed_tools(session_id: str, tool: str | None) -> Call[list[str]]:
    return Call(
        "DELETE",
        session_path(session_id, "allowed-tools"),
        _still_allowed,
        params={"tool": tool},
    )


def update_session(
    session_id: str,
    *,
    title: str | None,
    settings: Mapping[str, Any] | None,
    autochat: Mapping[str, Any] | None,
    agent: AgentName | str | None,
    model: str | None,
) -> Call[SessionRecord]:
    body = json_body(title=title, settings=settings, autochat=autochat, agent=agent, model=model)
    return Call("PATCH", session_path(session_id), _session, body)


def delete_session(session_id: str) -> Call[None]:
    return Call("DELETE", session_path(session_id), _nothing)


def export_session(session_id: str, allow_unimportable: bool) -> Call[bytes]:
    params = {"allow_unimportable": "true" if allow_unimportable else None}
    return Call("GET", session_path(session_id, "export"), _as_is, params=params)


def import_session(document: bytes | str | Mapping[str, Any]) -> Call[ImportAnswer]:
    return Call("POST", "api/sessions/import", partial(parse, ImportAnswer), _export(document))


def replay_export(document: bytes | str | Mapping[str, Any]) -> Call[ReplayAnswer]:
    return Call("POST", "api/sessions/replay", partial(parse, ReplayAnswer), _export(document))


def _export(document: bytes | str | Mapping[str, Any]) -> bytes:
    """An export document as a request body: its bytes, its text, or the parsed object."""
    if isinstance(document, Mapping):
        document = json.dumps(document)
    return document.encode() if isinstance(document, str) else document


# -- a conversation ----------------------------------------------------------------------


def send_message(
    session_id: str, text: str, images: Sequence[ImagePart], agent: AgentName | str | None
) -> Call[MessageAccepted]:
    body = json_body(text=text, images=list(images) or None, agent=agent)
    path = session_path(session_id, "messages")
    return Call("POST", path, partial(parse, MessageAccepted), body)


def stop(session_id: str) -> Call[bool]:
    return Call("POST", session_path(session_id, "stop"), _stopped)


def answer_approval(
    session_id: str, approval_id: str, decision: ApprovalDecision | str, note: str | None
) -> Call[ApprovalAnswer]:
    path = session_path(session_id, "approvals", segment(approval_id))
    body = json_body(decision=decision, note=note)
    return Call("POST", path, partial(parse, ApprovalAnswer), body)


def control(
    session_id: str,
    action: str,
    text: str | None = None,
    images: Sequence[ImagePart] = (),
    message_id: str | None = None,
) -> Call[TurnStarted]:
    """retry or edit_last (of the message `message_id`, when given): the new turn started."""
    body = json_body(action=action, text=text, images=list(images) or None, message_id=message_id)
    return Call("POST", session_path(session_id, "control"), partial(parse, TurnStarted), body)


def clear(session_id: str) -> Call[None]:
    body = json_body(action="clear")
    return Call("POST", session_path(session_id, "control"), _nothing, body)
