"""What front ends send to the core: chat, stop, approvals, settings."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from schema.enums import AgentName, ApprovalDecision, PermissionMode
from schema.messages import ImagePart

MAX_MESSAGE_CHARS = 200_000
"""The longest user message accepted, in characters (about 50k tokens)."""
MAX_TITLE_CHARS = 200
"""The longest session title accepted."""
_UNSHOWN_IN_TITLES = re.compile(
    "[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f"  # control characters but the spacing ones
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"  # bidirectional marks and controls
)
"""What a title drops: control characters that are not spacing (those become spaces), and
the marks, embeddings, overrides and isolates that change the direction text reads in."""
MAX_TOKEN_COUNT = 2**31 - 1
"""The most tokens a setting may name (`max_tokens`, the memory's and AutoChat's budgets):
past any model's window and any run's spending, and a number every vendor's API and
JavaScript read exactly (a larger one was sent to the model as typed)."""
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


def plain_title(text: str) -> str:
    """`text` as a chat's title holds it: one line, each run of line breaks, tabs and
    spaces made one space, the ends trimmed, and control characters and bidirectional
    controls dropped. A title is shown in lists next to other chats' titles: a newline
    would break the row, and a right-to-left override would make it (and what follows it)
    read backwards. Normalised rather than refused: what a person pasted is kept readable."""
    return " ".join(_UNSHOWN_IN_TITLES.sub("", text).split())


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


def _saved_count(value: object, info: ValidationInfo) -> object:
    """A token count past `MAX_TOKEN_COUNT` read back from JSON text (a chat's settings as
    the store keeps them, saved before that bound existed) is read as the bound, so the
    chat still opens and lists; given as a value (a request's body, a form) it is refused."""
    if info.mode == "json" and isinstance(value, int) and value > MAX_TOKEN_COUNT:
        return MAX_TOKEN_COUNT
    return value


class AutoChatSettings(BaseModel):
    """When on, the interpreter starts the next turn by itself after each turn ends."""

    model_config = ConfigDict(frozen=True)

    enabled: bool = False
    max_turns: int = Field(default=5, ge=1, le=1000)
    delay_s: float = Field(default=0.0, ge=0.0, le=3600.0, allow_inf_nan=False)
    token_budget: int | None = Field(default=None, ge=1, le=MAX_TOKEN_COUNT)
    time_budget_s: float | None = Field(default=None, gt=0.0, allow_inf_nan=False)
    continuation_prompt: str = Field(
        default=DEFAULT_CONTINUATION_PROMPT, max_length=MAX_MESSAGE_CHARS
    )

    _saved_budget = field_validator("token_budget", mode="before")(_saved_count)


class SessionSettings(BaseModel):
    """Per-session choices a person can change from the UI."""

    model_config = ConfigDict(frozen=True)

    model: str | None = None
    system_prompt: str = "You are a helpful assistant. Use tools when they help."
    temperature: float | None = Field(default=None, ge=0.0, le=2.0, allow_inf_nan=False)
    max_tokens: int | None = Field(default=None, ge=1, le=MAX_TOKEN_COUNT)
    max_iterations: int = Field(default=10, ge=1, le=200)
    memory_exchanges: int = Field(default=10, ge=1, le=100)
    memory_token_budget: int | None = Field(default=None, ge=1, le=MAX_TOKEN_COUNT)
    approval_timeout_s: float | None = Field(default=300.0, gt=0.0, allow_inf_nan=False)
    permissions: dict[str, PermissionMode] = Field(default_factory=dict)

    _saved_counts = field_validator("max_tokens", "memory_token_budget", mode="before")(
        _saved_count
    )


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
