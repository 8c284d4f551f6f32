"""Open Interpreter (LMC) chunks to flat dicts and schema messages, and back. Pure: no I/O.

An LMC chunk is a dict with ``role`` (``assistant``, ``computer``, ``user``), ``type``
(``message``, ``code``, ``console``, ``image``, ``confirmation``), an optional ``format``
(``python``, ``output``, ``active_line``, ``base64.png``, ``execution``, …), ``content``,
optional ``start`` / ``end`` flags around a streamed message, and an optional ``agent_name``.

Merging rules (`ChunkAssembler`):

- a chunk with ``start`` opens a message that collects content until the matching ``end``;
- a chunk without flags continues the open message when it has the same role, type and agent,
  and otherwise opens one that runs until a chunk of another kind (or the stream's end);
- ``console`` chunks with format ``active_line`` are progress noise and are dropped;
- an ``image`` chunk without flags is one whole image; ``confirmation`` asks to run code;
- a message is announced at its first non-empty content, so empty ones never appear.

Nothing here mutates its input: nested structures are copied or rebuilt.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import logging
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlsplit

from gui_agent.exceptions import ModelError
from schema import AgentName, ChatRequest, ImagePart, Message, MessageStatus, MessageType, Role
from schema.messages import new_id
from schema.requests import IMAGE_MEDIA_TYPES, image_bytes_problem

__all__ = [
    "AssemblyStep",
    "ChunkAssembler",
    "CodeBlock",
    "ConfirmationAsked",
    "ContentAdded",
    "MessageClosed",
    "MessageOpened",
    "RequestConverter",
    "agent_from_name",
]

logger = logging.getLogger(__name__)

STREAMED_TYPES: Final[Mapping[str, MessageType]] = {
    "message": MessageType.MESSAGE,
    "code": MessageType.CODE,
    "console": MessageType.CONSOLE,
}
LMC_TYPES: Final = frozenset({*STREAMED_TYPES, "image", "confirmation"})
RUN_CODE_TOOL: Final = "run_code"
MAX_ERROR_CHARS: Final = 2000  # of an interpreter's error chunk, in the error shown
DEFAULT_IMAGE_MEDIA_TYPE: Final = "image/png"

_FENCE_OPEN = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
_DATA_URL = re.compile(r"^data:(?P<media>[\w.+-]+/[\w.+-]+);base64,(?P<data>.*)$", re.DOTALL)


@dataclass(frozen=True, slots=True)
class CodeBlock:
    """One fenced code block found in text."""

    language: str
    code: str


# -- what the assembler reports, one chunk at a time -----------------------------------------


@dataclass(frozen=True, slots=True)
class MessageOpened:
    """A streamed message got its first content."""

    message_id: str
    role: Role
    message_type: MessageType
    agent: AgentName
    language: str | None = None


@dataclass(frozen=True, slots=True)
class ContentAdded:
    message_id: str
    text: str


@dataclass(frozen=True, slots=True)
class MessageClosed:
    """A whole message. Images arrive only this way (never opened, never streamed)."""

    message: Message


@dataclass(frozen=True, slots=True)
class ConfirmationAsked:
    """The interpreter asks to run code. `message` is the CONFIRMATION message showing it."""

    message: Message
    tool_name: str

    @property
    def code(self) -> str:
        return self.message.content

    @property
    def language(self) -> str | None:
        return self.message.language


AssemblyStep = MessageOpened | ContentAdded | MessageClosed | ConfirmationAsked


def agent_from_name(name: object, default: AgentName) -> AgentName:
    """The `AgentName` whose member name matches `name` (any case), else `default`."""
    if isinstance(name, AgentName):
        return name
    if isinstance(name, str):
        member = AgentName.__members__.get(name.strip().upper())
        if member is not None:
            return member
    return default


def _role_of(lmc_role: object) -> Role:
    if lmc_role == "user":
        return Role.USER
    if lmc_role == "system":
        return Role.SYSTEM
    return Role.ASSISTANT  # assistant, computer, anything else


def _text_of(content: object) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping | list | tuple):
        return json.dumps(content, default=str)
    return str(content)


def _metadata_of(lmc_role: object) -> dict[str, Any]:
    return {"lmc_role": lmc_role} if lmc_role == "computer" else {}


@dataclass(eq=False)
class _Draft:
    """A message being assembled. Mutable on purpose; lives only inside the assembler."""

    key: tuple[object, str, AgentName]
    role: Role
    message_type: MessageType
    agent: AgentName
    explicit: bool
    language: str | None = None
    lmc_format: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    parts: list[str] = field(default_factory=list)
    message_id: str = field(default_factory=new_id)
    announced: bool = False


class ChunkAssembler:
    """Merges a flat stream of LMC chunks into messages, one chunk at a time.

    Feed chunks with `feed`; call `finish` when the stream ended normally, or `interrupt` when
    it was cut (Stop, an error) to get the partial message, if any.
    """

    def __init__(self, *, agent: AgentName = AgentName.OTHER) -> None:
        self._default_agent = agent
        self._draft: _Draft | None = None

    @property
    def open_message_id(self) -> str | None:
        """The id of the message being streamed, if it has been announced."""
        draft = self._draft
        return draft.message_id if draft is not None and draft.announced else None

    def feed(self, chunk: Mapping[str, Any]) -> list[AssemblyStep]:
        lmc_type = chunk.get("type", "message")
        lmc_role = chunk.get("role", "assistant")
        agent = agent_from_name(chunk.get("agent_name"), self._default_agent)
        if lmc_type == "confirmation":
            steps = self.finish()
            steps.append(self._confirmation(chunk, agent))
            return steps
        if lmc_type == "image":
            return self._image(chunk, lmc_role, agent)
        if lmc_type == "error":  # Open Interpreter's server says so: {"role": "server", ...}
            detail = " ".join(str(chunk.get("content") or "").split()) or "no detail given"
            if len(detail) > MAX_ERROR_CHARS:
                detail = detail[: MAX_ERROR_CHARS - 1] + "…"
            raise ModelError(f"the interpreter reported an error: {detail}", provider="external")
        if lmc_type not in STREAMED_TYPES:
            logger.debug("ignoring LMC chunk of unknown type %r", lmc_type)
            return []
        return self._streamed(chunk, lmc_role, str(lmc_type), agent)

    def finish(self) -> list[AssemblyStep]:
        """Close the open message, if it has content, as complete."""
        message = self._close(MessageStatus.COMPLETE)
        return [MessageClosed(message)] if message is not None else []

    def interrupt(self, status: MessageStatus = MessageStatus.INTERRUPTED) -> Message | None:
        """Close the open message with `status`; None when nothing was streamed yet."""
        return self._close(status)

    # -- per kind ----------------------------------------------------------------------

    def _streamed(
        self, chunk: Mapping[str, Any], lmc_role: object, lmc_type: str, agent: AgentName
    ) -> list[AssemblyStep]:
        steps: list[AssemblyStep] = []
        key = (lmc_role, lmc_type, agent)
        draft = self._draft
        lmc_format = chunk.get("format")
        if (
            chunk.get("start")
            or draft is None
            or draft.key != key
            or _other_language(draft, lmc_format)
        ):
            steps.extend(self.finish())
            draft = self._draft = _Draft(
                key=key,
                role=_role_of(lmc_role),
                message_type=STREAMED_TYPES[lmc_type],
                agent=agent,
                explicit=bool(chunk.get("start")),
                metadata=_metadata_of(lmc_role),
            )
        if draft.message_type is MessageType.CODE and draft.language is None and lmc_format:
            draft.language = str(lmc_format)
        noise = draft.message_type is MessageType.CONSOLE and lmc_format == "active_line"
        text = "" if noise else _text_of(chunk.get("content"))
        if text:
            if not draft.announced:
                draft.announced = True
                steps.append(
                    MessageOpened(
                        draft.message_id, draft.role, draft.message_type, agent, draft.language
                    )
                )
            draft.parts.append(text)
            steps.append(ContentAdded(draft.message_id, text))
        if chunk.get("end"):
            steps.extend(self.finish())
        return steps

    def _image(
        self, chunk: Mapping[str, Any], lmc_role: object, agent: AgentName
    ) -> list[AssemblyStep]:
        key = (lmc_role, "image", agent)
        draft = self._draft
        if chunk.get("start") or draft is None or draft.key != key or not draft.explicit:
            steps = self.finish()
            draft = self._draft = _Draft(
                key=key,
                role=_role_of(lmc_role),
                message_type=MessageType.IMAGE,
                agent=agent,
                explicit=bool(chunk.get("start")),
                metadata=_metadata_of(lmc_role),
            )
        else:
            steps = []
        if chunk.get("format"):
            draft.lmc_format = str(chunk["format"])
        text = _text_of(chunk.get("content"))
        if text:
            draft.announced = True  # has content; images are never streamed as deltas
            draft.parts.append(text)
        if chunk.get("end") or not draft.explicit:
            steps.extend(self.finish())
        return steps

    def _confirmation(self, chunk: Mapping[str, Any], agent: AgentName) -> ConfirmationAsked:
        payload = chunk.get("content")
        language: str | None = None
        if isinstance(payload, Mapping):
            code = _text_of(payload.get("content"))
            language = str(payload["format"]) if payload.get("format") else None
        else:
            code = _text_of(payload)
        lmc_format = chunk.get("format")
        tool_name = RUN_CODE_TOOL if lmc_format in (None, "", "execution") else str(lmc_format)
        message = Message(
            role=Role.ASSISTANT,
            type=MessageType.CONFIRMATION,
            content=code,
            language=language,
            agent=agent,
            metadata={"tool": tool_name},
        )
        return ConfirmationAsked(message, tool_name)

    # -- closing -----------------------------------------------------------------------

    def _close(self, status: MessageStatus) -> Message | None:
        draft, self._draft = self._draft, None
        if draft is None or not draft.announced:
            return None
        content = "".join(draft.parts)
        images: tuple[ImagePart, ...] = ()
        metadata = dict(draft.metadata)
        if draft.message_type is MessageType.IMAGE:
            image = _image_part(draft.lmc_format, content)
            problem = None if image is None else image_problem(image)
            if image is None:
                logger.warning("LMC image with format %r cannot be shown", draft.lmc_format)
                metadata["lmc_format"] = draft.lmc_format
            elif problem is not None:  # kept as a note: the chat still saves and imports
                logger.warning("an image the agent sent cannot be shown: %s", problem)
                content = f"(An image the agent sent cannot be shown: {problem}.)"
                metadata["lmc_format"] = draft.lmc_format
            else:
                images, content = (image,), ""
        return Message(
            id=draft.message_id,
            role=draft.role,
            type=draft.message_type,
            content=content,
            agent=draft.agent,
            language=draft.language,
            images=images,
            status=status,
            metadata=metadata,
        )


def _other_language(draft: _Draft, lmc_format: object) -> bool:
    """Whether a code chunk in another language than the code block being streamed (a
    chunk without start/end flags) begins a block of its own, rather than continuing it."""
    return (
        draft.message_type is MessageType.CODE
        and not draft.explicit
        and bool(lmc_format)
        and draft.language is not None
        and str(lmc_format) != draft.language
    )


def image_problem(image: ImagePart) -> str | None:
    """Why `image` cannot be kept (and shown, exported, imported again), or None: a media
    type no page or vision API takes, data that is not base64 or not an image of its type,
    a URL that is not http(s)."""
    if image.media_type.lower() not in IMAGE_MEDIA_TYPES:
        return f"{image.media_type!r} is not an image type the app shows"
    if image.url is not None:
        parts = urlsplit(image.url)
        if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
            return "only http(s) image addresses are shown"
        return None
    try:
        decoded = base64.b64decode(image.data or "", validate=True)
    except (binascii.Error, ValueError):
        return "its data is not base64"
    return image_bytes_problem(image.media_type.lower(), decoded)


def _image_part(lmc_format: str | None, content: str) -> ImagePart | None:
    """An ImagePart for base64 data (``base64.png``, a data URL) or a URL; None otherwise.

    A file ``path`` is not turned into an image: reading files is not this module's job, and a
    front end must not serve arbitrary paths.
    """
    fmt = (lmc_format or "").lower()
    match = _DATA_URL.match(content.strip())
    if match is not None:
        return ImagePart(media_type=match["media"], data=match["data"])
    if fmt == "url":
        return ImagePart(url=content.strip())
    if fmt == "base64" or fmt.startswith("base64."):
        subtype = fmt.partition(".")[2] or "png"
        subtype = "jpeg" if subtype == "jpg" else subtype
        return ImagePart(media_type=f"image/{subtype}", data=content.strip())
    return None


# -- the public converter -----------------------------------------------------------------------


class RequestConverter:
    """Turns interpreter output into our types and our requests into interpreter input."""

    def __init__(self, *, default_language: str = "text") -> None:
        self.default_language = default_language

    # interpreter output -> ours

    def flatten(self, chunks: object) -> list[dict[str, Any]]:
        """Flat, freshly built chunk dicts from nested lists and nested interpreter output.

        A chunk whose ``content`` is a list of chunks (a sub-interpreter's output) is replaced
        by those chunks; each inherits the parent's ``agent_name`` and ``role`` unless it has
        its own. A bare string becomes an assistant message chunk, a `Message` its LMC chunks;
        anything else is logged and skipped. The input is not changed.
        """
        out: list[dict[str, Any]] = []
        self._flatten_into(out, chunks, inherited={})
        return out

    def _flatten_into(
        self, out: list[dict[str, Any]], item: object, inherited: dict[str, Any]
    ) -> None:
        if item is None:
            return
        if isinstance(item, str):
            out.append({"role": "assistant", "type": "message", "content": item, **inherited})
            return
        if isinstance(item, Mapping):
            content = item.get("content")
            if isinstance(content, list | tuple) and _has_chunks(content):
                scope = dict(inherited)
                for name in ("role", "agent_name"):
                    if name in item:
                        scope[name] = copy.deepcopy(item[name])
                for child in content:
                    self._flatten_into(out, child, scope)
                return
            chunk = {str(k): copy.deepcopy(v) for k, v in item.items()}
            for name, value in inherited.items():
                chunk.setdefault(name, copy.deepcopy(value))
            out.append(chunk)
            return
        if isinstance(item, Message):
            for chunk in self._message_to_lmc(item):
                out.append({**copy.deepcopy(inherited), **chunk})
            return
        if isinstance(item, list | tuple | Iterator):
            for child in item:
                self._flatten_into(out, child, inherited)
            return
        logger.warning("ignoring a %s in an interpreter's output", type(item).__name__)

    def extract_code(self, text: str) -> list[CodeBlock]:
        """The fenced (``` or ~~~) code blocks in `text`, in order.

        The language is the first word of the fence's info string, else `default_language`.
        An unclosed fence runs to the end of the text.
        """
        blocks: list[CodeBlock] = []
        lines = text.splitlines()
        index = 0
        while index < len(lines):
            opening = _FENCE_OPEN.match(lines[index])
            index += 1
            if opening is None:
                continue
            fence, info = opening["fence"], opening["info"].strip()
            if fence[0] == "`" and "`" in info:
                continue  # inline code such as ```x```, not a fence
            indent = len(opening["indent"])
            closing = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
            body: list[str] = []
            while index < len(lines) and not closing.match(lines[index]):
                body.append(_dedent(lines[index], indent))
                index += 1
            index += 1  # skip the closing fence
            language = info.split()[0] if info else self.default_language
            blocks.append(CodeBlock(language=language, code="\n".join(body)))
        return blocks

    def chunks_to_messages(self, chunks: object, *, agent: AgentName) -> list[Message]:
        """Whole messages from a (possibly nested) list of chunks; `agent` where none is named."""
        assembler = ChunkAssembler(agent=agent)
        messages: list[Message] = []
        for chunk in self.flatten(chunks):
            messages.extend(_messages_of(assembler.feed(chunk)))
        messages.extend(_messages_of(assembler.finish()))
        return messages

    # ours -> interpreter input

    def user_chunk(self, text: str) -> dict[str, Any]:
        """The LMC dict of a user's text message."""
        return {"role": "user", "type": "message", "content": text}

    def request_to_lmc(self, request: ChatRequest | Message | str) -> list[dict[str, Any]]:
        """A person's message as LMC chunks: the text, then one chunk per attached image."""
        if isinstance(request, str):
            return [self.user_chunk(request)]
        chunks = [
            self.user_chunk(request.text if isinstance(request, ChatRequest) else request.content)
        ]
        chunks.extend(_image_chunks("user", request.images))
        return chunks

    def messages_to_lmc(self, messages: Sequence[Message]) -> list[dict[str, Any]]:
        """A conversation as LMC chunks. Display-only messages (confirmations) are left out."""
        chunks: list[dict[str, Any]] = []
        for message in messages:
            if message.display_only:
                continue
            chunks.extend(self._message_to_lmc(message))
        return chunks

    def _message_to_lmc(self, message: Message) -> list[dict[str, Any]]:
        role = {Role.USER: "user", Role.SYSTEM: "system"}.get(message.role, "assistant")
        chunks: list[dict[str, Any]] = []
        if message.role is Role.TOOL or message.type in (MessageType.CONSOLE, MessageType.FUNCTION):
            chunks.append(
                {
                    "role": "computer",
                    "type": "console",
                    "format": "output",
                    "content": message.content,
                }
            )
        elif message.type is MessageType.CODE:
            language = message.language or self.default_language
            chunks.append(
                {"role": role, "type": "code", "format": language, "content": message.content}
            )
        elif message.content:
            chunks.append({"role": role, "type": "message", "content": message.content})
        chunks.extend(_image_chunks(role, message.images))
        return chunks


def _has_chunks(items: Sequence[object]) -> bool:
    """Whether a ``content`` list holds chunks (not, say, OpenAI-style text parts)."""
    return any(
        isinstance(item, list | tuple)
        or (isinstance(item, Mapping) and ("role" in item or item.get("type") in LMC_TYPES))
        for item in items
    )


def _dedent(line: str, indent: int) -> str:
    stripped = len(line) - len(line.lstrip(" "))
    return line[min(indent, stripped) :]


def _messages_of(steps: Iterable[AssemblyStep]) -> list[Message]:
    return [step.message for step in steps if isinstance(step, MessageClosed | ConfirmationAsked)]


def _image_chunks(role: str, images: Iterable[ImagePart]) -> list[dict[str, Any]]:
    chunks: list[dict[str, Any]] = []
    for image in images:
        if image.data is not None:
            subtype = image.media_type.partition("/")[2] or "png"
            chunks.append(
                {
                    "role": role,
                    "type": "image",
                    "format": f"base64.{subtype}",
                    "content": image.data,
                }
            )
        elif image.url is not None:
            chunks.append({"role": role, "type": "image", "format": "url", "content": image.url})
    return chunks
