"""Pure mapping of our schema to OpenAI Chat Completions requests.

No SDK, no I/O: `messages_to_openai` and `tools_to_openai` build request dicts, and
`build_request` the keyword arguments of one streamed call. The way back, streamed chunks
to our deltas and one final `ModelResponse`, is `connectors.openai_stream`
(`StreamAccumulator`, `body_as_chunk`, `finish_reason`: importable from here too). Works
for OpenAI and OpenAI-compatible servers (llama.cpp, vLLM, Ollama, LM Studio, DeepSeek,
Mistral).

The OpenAI service and the compatible servers differ in a few things, all decided by one
check, `is_openai_service` (the host is api.openai.com): only the service takes
``max_completion_tokens`` (its o-series and gpt-5 models refuse ``max_tokens``, which older
compatible servers know alone), and only the service takes system messages after the first
turn and user messages in a row; other servers get those folded into user turns and merged
(`RequestOptions.system_anywhere`, `consecutive_user_turns`; `connectors.chat_templates`).
What one server has shown it refuses besides is `connectors.openai_dialect`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from connectors.chat_templates import system_first_only, user_turns_merged
from connectors.openai_stream import (
    FINISH_REASONS,
    REASONING_FIELDS,
    StreamAccumulator,
    StreamDelta,
    body_as_chunk,
    finish_reason,
)
from connectors.openai_tool_calls import PROVIDER_DATA_KEY
from connectors.wire_names import wire_id, wire_name
from schema import (
    ImagePart,
    Message,
    ModelSettings,
    Role,
    ToolCall,
    ToolSchema,
)

__all__ = [
    "FINISH_REASONS",  # re-exported
    "MAX_CALL_ID_CHARS",
    "MAX_TOOL_NAME_CHARS",
    "OPENAI_HOST",
    "PROVIDER_DATA_KEY",  # re-exported
    "REASONING_FIELDS",  # re-exported
    "MaxTokensField",
    "RequestOptions",
    "StreamAccumulator",  # re-exported
    "StreamDelta",  # re-exported
    "body_as_chunk",  # re-exported
    "build_request",
    "call_extras",
    "finish_reason",  # re-exported
    "image_url",
    "is_openai_service",
    "message_to_openai",
    "messages_to_openai",
    "tool_choice_to_openai",
    "tools_to_openai",
]

logger = logging.getLogger(__name__)

MAX_CALL_ID_CHARS = 40
"""OpenAI refuses longer tool-call ids (ids from other vendors are shortened to fit)."""

MAX_TOOL_NAME_CHARS = 64

OPENAI_HOST: Final = "api.openai.com"

MaxTokensField = Literal["max_tokens", "max_completion_tokens"]


def is_openai_service(base_url: str) -> bool:
    """Whether `base_url` leads to the OpenAI service itself (host api.openai.com, in any
    case, with any scheme, port, path or trailing slash) rather than a compatible server."""
    url = base_url.strip()
    host = urlsplit(url if "//" in url else f"//{url}").hostname or ""
    return host.rstrip(".") == OPENAI_HOST


def image_url(image: ImagePart) -> str:
    """The URL to send for an image: its own URL, or a base64 data URL."""
    if image.url is not None:
        return image.url
    return f"data:{image.media_type};base64,{image.data}"


def _content_with_images(text: str, images: Sequence[ImagePart]) -> str | list[dict[str, Any]]:
    if not images:
        return text
    parts: list[dict[str, Any]] = []
    if text:
        parts.append({"type": "text", "text": text})
    parts.extend({"type": "image_url", "image_url": {"url": image_url(i)}} for i in images)
    return parts


def _tool_call_to_openai(call: ToolCall, extra: object = None) -> dict[str, Any]:
    wire: dict[str, Any] = {
        "id": wire_id(call.id, max_chars=MAX_CALL_ID_CHARS),
        "type": "function",
        "function": {
            "name": wire_name(call.name, max_chars=MAX_TOOL_NAME_CHARS),
            "arguments": call.arguments,
        },
    }
    if isinstance(extra, Mapping) and extra:
        wire["extra_content"] = dict(extra)
    return wire


def call_extras(message: Message, model: str | None) -> Mapping[str, Any]:
    """The ``extra_content`` of `message`'s tool calls, by call id, when `model` wrote them
    (Gemini's OpenAI-compatible API refuses a call of the tool loop that comes back without
    its thought signature; another model may refuse the field)."""
    data = message.metadata.get("provider_data")
    mine = data.get(PROVIDER_DATA_KEY) if isinstance(data, Mapping) else None
    if not isinstance(mine, Mapping) or model is None or mine.get("model") != model:
        return {}
    extras = mine.get("extra_content")
    return extras if isinstance(extras, Mapping) else {}


def message_to_openai(
    message: Message,
    model: str | None = None,
    *,
    reasoning_back: bool = False,
    empty_replies: bool = True,
) -> list[dict[str, Any]]:
    """One message as zero or more wire messages (a tool result with images needs two).
    `model` is the model the request goes to: what its tool calls carried goes back;
    `reasoning_back`: an assistant message with tool calls carries its reasoning as
    ``reasoning_content`` ("" when it has none), which thinking models' APIs (Kimi,
    DeepSeek, GLM) require during a tool loop.

    Without `empty_replies`, an assistant message with neither text nor tool calls (a reply
    stopped before its first word, a thinking model's reply that ran out of tokens while it
    was thinking) is left out: it tells the model nothing, and Mistral's API and vLLM
    serving a Mistral model refuse it ("Assistant message must have either content or
    tool_calls, but not none"; "Invalid assistant message: role='assistant' content=None
    tool_calls=None")."""
    if message.display_only:
        return []
    empty = message.role is Role.ASSISTANT and not message.tool_calls
    if empty and not empty_replies and not message.content.strip():
        return []
    if message.role is Role.SYSTEM:
        return [{"role": "system", "content": message.content}]
    if message.role is Role.USER:
        return [{"role": "user", "content": _content_with_images(message.content, message.images)}]
    if message.role is Role.ASSISTANT:
        wire: dict[str, Any] = {"role": "assistant", "content": message.content}
        if message.tool_calls:
            # Servers such as llama.cpp answer 500 when `content` is missing here.
            extras = call_extras(message, model)
            wire["tool_calls"] = [
                _tool_call_to_openai(c, extras.get(c.id)) for c in message.tool_calls
            ]
            if reasoning_back:
                wire["reasoning_content"] = message.reasoning or ""
        return [wire]
    call_id = wire_id(message.tool_call_id or "", max_chars=MAX_CALL_ID_CHARS)
    wires: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": call_id, "content": message.content}
    ]
    if message.images:
        # Tool messages carry text only; images a tool returned follow as a user message
        # (after the last result of the call's step: see `messages_to_openai`).
        label = f"Images returned by the tool {message.name or message.tool_call_id}:"
        wires.append({"role": "user", "content": _content_with_images(label, message.images)})
    return wires


def messages_to_openai(
    messages: Iterable[Message],
    *,
    model: str | None = None,
    reasoning_back: bool = False,
    empty_replies: bool = True,
) -> list[dict[str, Any]]:
    """Our history as Chat Completions messages for `model`; display-only messages are
    left out, and so are empty replies without `empty_replies` (see `message_to_openai`).
    What a tool call carried besides the call goes back to the model that wrote it
    (`call_extras`); with `reasoning_back`, the reasoning of each assistant message with
    tool calls goes with it.

    CODE, CONSOLE and FUNCTION messages go as their plain text content. The user messages
    carrying images that tools returned wait until the step's last tool result: the API
    refuses a tool message that does not follow its call or another tool message.
    """
    wire: list[dict[str, Any]] = []
    images: list[dict[str, Any]] = []
    for message in messages:
        first, *rest = message_to_openai(
            message, model, reasoning_back=reasoning_back, empty_replies=empty_replies
        ) or [{}]
        if not first:  # display-only, or an empty reply left out
            continue
        if message.role is not Role.TOOL:
            wire.extend(images)
            images.clear()
        wire.append(first)
        images.extend(rest)
    wire.extend(images)
    return wire


def tools_to_openai(tools: Iterable[ToolSchema]) -> list[dict[str, Any]]:
    """Our tool schemas as Chat Completions function tools."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            },
        }
        for tool in tools
    ]


def tool_choice_to_openai(choice: str) -> str | dict[str, Any] | None:
    """``auto`` → None (server default), ``required``/``none`` as is, a name → that function."""
    if choice == "auto":
        return None
    if choice in ("required", "none"):
        return choice
    return {"type": "function", "function": {"name": choice}}


@dataclass(frozen=True, slots=True)
class RequestOptions:
    """What a provider knows besides the messages: its defaults and wire dialect."""

    model: str
    temperature: float | None = None
    max_tokens: int | None = None
    max_tokens_field: MaxTokensField = "max_tokens"
    stream_usage: bool = True
    system_anywhere: bool = True
    """False: system messages after the first non-system one go as user turns (see
    `connectors.chat_templates`), for servers whose chat template refuses them."""
    consecutive_user_turns: bool = True
    """False: user messages in a row go as one (see `connectors.chat_templates`), for
    servers whose chat template wants user and assistant turns to alternate."""
    reasoning_back: bool = False
    """True: assistant messages with tool calls carry their ``reasoning_content`` (see
    `message_to_openai`), for thinking models' APIs that require it."""
    empty_replies: bool = True
    """False: assistant messages with neither text nor tool calls are left out (see
    `message_to_openai`), for servers that refuse them (Mistral's validator)."""


def build_request(
    messages: Iterable[Message],
    tools: Sequence[ToolSchema],
    settings: ModelSettings | None,
    options: RequestOptions,
) -> dict[str, Any]:
    """The keyword arguments of one streamed ``chat.completions.create`` call."""
    wire = messages_to_openai(
        messages,
        model=options.model,
        reasoning_back=options.reasoning_back,
        empty_replies=options.empty_replies,
    )
    if not options.system_anywhere:
        wire = system_first_only(wire)
    if not options.consecutive_user_turns:
        wire = user_turns_merged(wire)
    request: dict[str, Any] = {"model": options.model, "messages": wire, "stream": True}
    if options.stream_usage:
        request["stream_options"] = {"include_usage": True}
    temperature = options.temperature
    max_tokens = options.max_tokens
    if settings is not None:
        temperature = settings.temperature if settings.temperature is not None else temperature
        max_tokens = settings.max_tokens if settings.max_tokens is not None else max_tokens
    if temperature is not None:
        request["temperature"] = temperature
    if max_tokens is not None:
        request[options.max_tokens_field] = max_tokens
    if tools:
        request["tools"] = tools_to_openai(tools)
        choice = tool_choice_to_openai(settings.tool_choice if settings else "auto")
        if choice is not None:
            request["tool_choice"] = choice
    return request
