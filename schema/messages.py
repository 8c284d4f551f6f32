"""Messages, tool calls and results, tool schemas and usage."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from schema.builders import builder
from schema.enums import AgentName, MessageStatus, MessageType, Role

_CONFIRMATION = MessageType.CONFIRMATION  # an enum class attribute lookup costs a dict walk
_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48))
_UUID4_SET = (0x4000 << 64) | (0x8000 << 48)


def new_id() -> str:
    """A fresh random identifier: a UUID4 in hex form (32 characters).

    Built from `os.urandom` directly, with the version and variant bits set the way
    `uuid.uuid4()` sets them, at half its cost: a turn makes several ids."""
    return f"{int.from_bytes(os.urandom(16)) & _UUID4_CLEAR | _UUID4_SET:032x}"


_SURROGATE = re.compile("[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """`text` with every lone surrogate replaced by U+FFFD, so it can be encoded as UTF-8.

    Lone surrogates come from undecodable bytes (file names, `surrogateescape`) and from
    broken JSON escapes in what a model or a client sends. A message holding one cannot
    be saved or sent as JSON. ASCII text (the usual case) is returned as it is at once."""
    if text.isascii():
        return text
    return _SURROGATE.sub("\ufffd", text)


utcnow = functools.partial(datetime.now, UTC)
"""`utcnow()`: the current time, timezone-aware UTC. A partial, not a function: it is the
default factory of every message's and event's timestamp, and calls it without a Python
frame of its own (a turn stamps about twenty)."""


class ToolCall(BaseModel):
    """A model's request to call one tool. `arguments` is the raw JSON text the model wrote."""

    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    arguments: str = "{}"

    def parsed_arguments(self) -> dict[str, Any]:
        """The arguments as a dict; raises ValueError when they are not a JSON object. An
        object encoded twice (a JSON string holding it, as some models write it) is read as
        the tools read it when they run, so what a person approves is what runs."""
        value = json.loads(self.arguments or "{}")
        if isinstance(value, str) and value.lstrip().startswith("{"):
            with contextlib.suppress(ValueError):
                value = json.loads(value)
        if not isinstance(value, dict):
            raise ValueError("tool arguments must be a JSON object")
        return value


class ImagePart(BaseModel):
    """An image attached to a message: base64 data with its media type, or a URL.

    A field it does not define is refused, not dropped: a client's `detail` or `alt` would
    otherwise vanish without a word. Nothing stored can hold one: every image saved was
    written by this model, which has had these three fields only (imports refuse unknown
    fields too, see `gui_agent.import_checks`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    media_type: str = "image/png"
    data: str | None = None
    url: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> ImagePart:
        if (self.data is None) == (self.url is None):
            raise ValueError("an image needs exactly one of data or url")
        return self


class Message(BaseModel):
    """One immutable entry of a conversation."""

    model_config = ConfigDict(frozen=True)

    id: str = Field(default_factory=new_id)
    role: Role
    type: MessageType = MessageType.MESSAGE
    content: str = ""
    agent: AgentName | None = None
    created_at: datetime = Field(default_factory=utcnow)
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    name: str | None = None
    language: str | None = None
    reasoning: str | None = None
    images: tuple[ImagePart, ...] = ()
    status: MessageStatus = MessageStatus.COMPLETE
    metadata: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _tool_messages_answer_a_call(self) -> Message:
        if self.role is Role.TOOL and not self.tool_call_id:
            raise ValueError("a tool message must carry the tool_call_id it answers")
        if self.tool_calls and self.role is not Role.ASSISTANT:
            raise ValueError("only assistant messages carry tool calls")
        return self

    @property
    def display_only(self) -> bool:
        """True for messages shown to people but never sent to a model: confirmations, notes,
        a worker's steps, and a message of the person's a Stop left unanswered (the page
        says to send it again: the model is not to answer it unasked, nor twice)."""
        if self.type is _CONFIRMATION:
            return True
        metadata = self.metadata
        return bool(metadata.get("display_only")) or metadata.get(UNANSWERED) is True


UNANSWERED = "unanswered"
"""Metadata key (True) of a message of the person's that a Stop left unanswered: the turn
it waited for was stopped before the agent read it (front ends say so beside it)."""

CREW_SPEAKER = "crew_speaker"
"""Metadata key of a crew member's reply: the member's name ("doer", "reviewer"), on a
reply it completed and on one a Stop or an error ended (`MessageStarted.speaker`). Not
`crew_member`, which marks a hand-over to the member."""


class ToolSchema(BaseModel):
    """What a model is told about a tool: its name, description and JSON-schema parameters."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    destructive: bool = False


class ToolResult(BaseModel):
    """The outcome of one tool call. Errors are data: `is_error` with a message in `content`."""

    model_config = ConfigDict(frozen=True)

    call_id: str
    name: str
    content: str
    is_error: bool = False
    truncated: bool = False
    duration_ms: float = 0.0
    message_type: MessageType = MessageType.FUNCTION
    images: tuple[ImagePart, ...] = ()
    metadata: dict[str, Any] = Field(default_factory=dict)


class Usage(BaseModel):
    """Token and request counts. `estimated` is true when any count was estimated, not counted."""

    model_config = ConfigDict(frozen=True)

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    estimated: bool = False

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        if not (self.input_tokens or self.output_tokens or self.requests or self.estimated):
            return other  # nothing to add: usages are immutable, so share it
        return _usage(
            {
                "input_tokens": self.input_tokens + other.input_tokens,
                "output_tokens": self.output_tokens + other.output_tokens,
                "requests": self.requests + other.requests,
                "estimated": self.estimated or other.estimated,
            }
        )


_usage = builder(Usage)  # every model call adds usages (see `schema.builders`)
