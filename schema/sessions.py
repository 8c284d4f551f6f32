"""A session's stored description: what the session list, the store and exports share."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field

from schema.enums import AgentName, InterpreterState
from schema.messages import Usage, new_id, utcnow
from schema.requests import AutoChatSettings, SessionSettings


class SessionRecord(BaseModel):
    """Everything about a session except its messages."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=new_id)
    owner: str = "local"
    title: str = ""
    agent: AgentName = AgentName.AGENT_EXECUTOR
    settings: SessionSettings = SessionSettings()
    autochat: AutoChatSettings = AutoChatSettings()
    state: InterpreterState = InterpreterState.INIT
    usage: Usage = Usage()
    goal: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)
