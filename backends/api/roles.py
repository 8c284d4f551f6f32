"""Agent roles as a request names them: by the words the Python API and the terminal take
("planner", "executor", "supervisor", "thought", "crew", in any case) or by their enum
names ("LLM_PLANNER"), wherever a body has an `agent` (creating a chat, changing it,
sending a message). A name for no role the chat offers is refused with the words it does
take (see `gui_agent.agents.roles.parse_role`)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from backends.api.errors import ApiError, shortened
from gui_agent.agents.roles import parse_role
from gui_agent.exceptions import InvalidRequest
from schema import AgentName


def with_role(data: dict[str, Any], offered: Iterable[AgentName]) -> dict[str, Any]:
    """`data` with its `agent`, when it is text, made the enum value of the role it names
    among `offered`; ApiError 400 naming the roles offered when it names none of them. Any
    other `agent` (none, null, a number) is left for the body's validation to judge."""
    agent = data.get("agent")
    if not isinstance(agent, str):
        return data
    try:
        role = parse_role(shortened(agent), offered)
    except InvalidRequest as exc:
        raise ApiError(400, "invalid_request", f"agent: {exc}") from None
    return {**data, "agent": role.value}
