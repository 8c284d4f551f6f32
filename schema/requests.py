"""What front ends send to the core: chat, stop, approvals, settings."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from schema.enums import AgentName, ApprovalDecision, PermissionMode
from schema.messages import ImagePart

MAX_MESSAGE_CHARS = 200_000
"""The longest user message accepted, in characters (about 50k tokens)."""
MAX_TITLE_CHARS = 200
"""The longest session title accepted."""
MAX_IMAGES = 8
"""Images one message can carry."""
MAX_IMAGE_BYTES = 5 * 2**20
"""The largest image accepted, decoded (what vision APIs commonly take per image)."""
IMAGE_MEDIA_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types a person can send: what every vision API reads (no SVG: it is a script
carrier, not a picture)."""

_IMAGE_SIGNATURES: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
)

DEFAULT_CONTINUATION_PROMPT = (
    "Continue working toward the goal. When the goal is fully achieved, call the "
    "task_complete tool with a short summary."
)


def sniff_image_type(data: bytes) -> str | None:
    """The media type of PNG, JPEG, GIF or WebP data, recognised by its first bytes; None
    for anything else. What a file is called or claims to be decides nothing."""
    for magic, media_type in _IMAGE_SIGNATURES:
        if data.startswith(magic):
            return media_type
    if len(data) >= 12 and data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_bytes_problem(media_type: str, data: bytes) -> str | None:
    """Why `data` cannot go as an image declared `media_type`, or None when it can: its
    bytes must be a PNG, JPEG, GIF or WebP image, of the declared type (vision APIs refuse
    an image whose bytes and declared type differ)."""
    found = sniff_image_type(data)
    if found is None:
        return "the data is not a PNG, JPEG, GIF or WebP image"
    if found != media_type.lower():
        return f"the data is {found}, not {media_type} as declared"
    return None


class AutoChatSettings(BaseModel):
    """When on, the interpreter starts the next turn by itself after each turn ends."""

    model_config = ConfigDict(frozen=True)

    enabled: bool = False
    max_turns: int = Field(default=5, ge=1, le=1000)
    delay_s: float = Field(default=0.0, ge=0.0, le=3600.0)
    token_budget: int | None = Field(default=None, ge=1)
    time_budget_s: float | None = Field(default=None, gt=0.0)
    continuation_prompt: str = Field(
        default=DEFAULT_CONTINUATION_PROMPT, max_length=MAX_MESSAGE_CHARS
    )


class SessionSettings(BaseModel):
    """Per-session choices a person can change from the UI."""

    model_config = ConfigDict(frozen=True)

    model: str | None = None
    system_prompt: str = "You are a helpful assistant. Use tools when they help."
    temperature: float | None = Field(default=None, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, ge=1)
    max_iterations: int = Field(default=10, ge=1, le=200)
    memory_exchanges: int = Field(default=10, ge=1, le=100)
    memory_token_budget: int | None = Field(default=None, ge=1)
    approval_timeout_s: float | None = Field(default=300.0, gt=0.0)
    permissions: dict[str, PermissionMode] = Field(default_factory=dict)


class ChatRequest(BaseModel):
    """A person's message to a session. Unknown fields are refused, not dropped."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    session_id: str
    text: str = Field(max_length=MAX_MESSAGE_CHARS)
    images: tuple[ImagePart, ...] = ()
    agent: AgentName | None = None


class StopRequest(BaseModel):
    model_config = ConfigDict(frozen=True)

    session_id: str


class ApprovalResponse(BaseModel):
    """A person's decision on one approval request. Unknown fields are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    session_id: str
    approval_id: str
    decision: ApprovalDecision
    note: str | None = Field(default=None, max_length=2000)


class SettingsUpdate(BaseModel):
    """Change a session's settings, AutoChat settings or agent role."""

    model_config = ConfigDict(frozen=True)

    session_id: str
    settings: SessionSettings | None = None
    autochat: AutoChatSettings | None = None
    agent: AgentName | None = None


class ControlRequest(BaseModel):
    """Retry the last turn, edit-and-resend the last user message (its new `text` and
    `images`), or clear the history. Unknown fields are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    session_id: str
    action: Literal["retry", "edit_last", "clear"]
    text: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)
    images: tuple[ImagePart, ...] = ()
    message_id: str | None = None
    """retry and edit_last: the id of the person's message the client means (its last one
    as it shows it). Another message of theirs sent since (another tab) makes it 409, and
    nothing changes; without it the last one is taken, whichever it is."""
