"""Pure mapping between our schema and the Anthropic Messages API wire format.

No SDK, no I/O. `build_request` turns our history into the ``system`` / ``messages`` /
``tools`` parameters; `EventAccumulator` turns raw stream events (dicts, or the SDK's event
objects' ``to_dict()``) into our deltas and one final `ModelResponse`; `body_error` reads a
JSON document a server sent instead of the stream.

Choices made here:

- System messages, wherever they are, are joined (blank line between) into ``system``.
- Consecutive messages of one role are merged (the API wants user / assistant turns), so
  parallel tool results become one user message of ``tool_result`` blocks, followed by any
  user text.
- A tool result is ``is_error`` when its message says so (``metadata["is_error"]``, as the
  agent loop writes it, or an ERROR status). A failed result without text or images goes
  as `EMPTY_ERROR_RESULT`: the API refuses an empty one with ``is_error``.
- Assistant tool calls become ``tool_use`` blocks whose ``input`` is the parsed arguments.
  Arguments that are not a JSON object (a truncated or malformed call) are sent as
  ``{"_raw_arguments": "<the text>"}`` so the model can see what it wrote; the tool result
  that follows tells it the call could not be parsed.
- Call ids and tool names the API would refuse (an id another vendor wrote, such as
  ``functions.Bash:0``; an empty or overlong name) are rewritten on the wire, the same way
  in the call and its result (`connectors.wire_names`); the history keeps them as they were.
- A request that offers no tools (the crew's reviewer, the planner's planning call, the
  thought role) has the history's tool calls and results told in words
  (`connectors.tool_history`): the API refuses ``tool_use`` and ``tool_result`` blocks in
  a request without tools ("Requests which include `tool_use` or `tool_result` blocks must
  define tools").
- Empty or blank text is left out (the API refuses a text block without non-whitespace
  text, such as the blank lines some models write before a tool call), and so are messages
  that end up with no content at all.
- Thinking goes back as the API issued it: a reply's signed ``thinking`` and
  ``redacted_thinking`` blocks are kept in ``ModelResponse.provider_data["anthropic"]`` (the
  agent stores that in the message's metadata) and are sent first in that assistant turn, as
  the API requires during a tool loop. Only to the model that signed them: after a switch
  of model they are left out, and so is reasoning without a signature (from other
  providers). When two assistant messages merge into one turn, only the first one's
  thinking is kept (thinking must lead the turn).
- Stop reasons are normalised to the OpenAI words the rest of GuiAgent uses: end_turn and
  stop_sequence → ``stop``, max_tokens and model_context_window_exceeded (the reply
  filled the context window) → ``length``, tool_use → ``tool_calls``,
  refusal → ``content_filter``; anything else passes through.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from connectors.resilience import shorten
from connectors.tool_history import has_tool_history, tool_history_as_text
from connectors.wire_names import wire_id, wire_name
from gui_agent.exceptions import (
    ModelAuthError,
    ModelError,
    ModelNotFound,
    ModelRateLimited,
    ModelResponseError,
    ModelServerError,
)
from schema import (
    ImagePart,
    Message,
    MessageStatus,
    ModelReasoningDelta,
    ModelResponse,
    ModelSettings,
    ModelTextDelta,
    Role,
    ToolCall,
    ToolSchema,
    Usage,
    new_id,
)

logger = logging.getLogger(__name__)

StreamDelta = ModelTextDelta | ModelReasoningDelta

STOP_REASONS: Mapping[str, str] = MappingProxyType(
    {
        "end_turn": "stop",
        "stop_sequence": "stop",
        "max_tokens": "length",
        "model_context_window_exceeded": "length",
        "tool_use": "tool_calls",
        "refusal": "content_filter",
    }
)


PROVIDER_DATA_KEY = "anthropic"
"""The key of this provider's part of `ModelResponse.provider_data`."""

_THINKING_TYPES = frozenset({"thinking", "redacted_thinking"})

MAX_TOOL_NAME_CHARS = 200
"""The longest ``tool_use.name`` the API takes back."""

MAX_CALL_ID_CHARS = 64

MAX_TEMPERATURE = 1.0
"""The highest temperature the API takes; a higher one (a setting made for another vendor,
whose range goes to 2) is sent as this."""

EMPTY_ERROR_RESULT = "(the tool failed without saying why)"
"""Sent as a failed tool result that has no text and no image: the API refuses an
``is_error`` result with empty content ("content cannot be empty if `is_error` is true")."""


def _call_id(call_id: str | None) -> str:
    """A call id as the API takes it (``^[a-zA-Z0-9_-]+$``): ids other vendors wrote, such
    as ``functions.Bash:0``, are rewritten, the same way for the call and its result."""
    return wire_id(call_id or "", max_chars=MAX_CALL_ID_CHARS, safe_chars=True)


def image_block(image: ImagePart) -> dict[str, Any]:
    if image.url is not None:
        return {"type": "image", "source": {"type": "url", "url": image.url}}
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": image.media_type, "data": image.data},
    }


def tool_input(arguments: str) -> dict[str, Any]:
    """The ``input`` object for a tool call's raw argument text (see module docstring)."""
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {"_raw_arguments": arguments}
    return value if isinstance(value, dict) else {"_raw_arguments": arguments}


def _text_blocks(text: str, images: Sequence[ImagePart]) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text.strip() else []
    blocks.extend(image_block(image) for image in images)
    return blocks


def _is_error(message: Message) -> bool:
    return bool(message.metadata.get("is_error")) or message.status is MessageStatus.ERROR


def signed_thinking(message: Message, model: str | None) -> list[dict[str, Any]]:
    """The thinking blocks `message` carries from an Anthropic reply by `model`, as issued."""
    data = message.metadata.get("provider_data")
    mine = data.get(PROVIDER_DATA_KEY) if isinstance(data, Mapping) else None
    if not isinstance(mine, Mapping) or model is None or mine.get("model") != model:
        return []
    blocks = mine.get("thinking")
    if not isinstance(blocks, list):
        return []
    return [dict(b) for b in blocks if isinstance(b, Mapping) and _valid_thinking(b)]


def _valid_thinking(block: Mapping[str, Any]) -> bool:
    if block.get("type") == "thinking":
        return isinstance(block.get("thinking"), str) and isinstance(block.get("signature"), str)
    return block.get("type") == "redacted_thinking" and isinstance(block.get("data"), str)


def message_blocks(message: Message, model: str | None = None) -> tuple[str, list[dict[str, Any]]]:
    """One non-system message as (role, content blocks). `model` is the model the request
    goes to: thinking that model signed is sent back."""
    if message.role is Role.TOOL:
        failed = _is_error(message)
        content: list[dict[str, Any]] | str = _text_blocks(message.content, message.images)
        if not message.images:
            blank = failed and not message.content.strip()
            content = EMPTY_ERROR_RESULT if blank else message.content
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": _call_id(message.tool_call_id),
            "content": content,
        }
        if failed:
            block["is_error"] = True
        return "user", [block]
    if message.role is Role.ASSISTANT:
        blocks = signed_thinking(message, model)
        blocks += _text_blocks(message.content, ())
        blocks.extend(
            {
                "type": "tool_use",
                "id": _call_id(c.id),
                "name": wire_name(c.name, max_chars=MAX_TOOL_NAME_CHARS),
                "input": tool_input(c.arguments),
            }
            for c in message.tool_calls
        )
        return "assistant", blocks
    return "user", _text_blocks(message.content, message.images)


def messages_to_anthropic(
    messages: Iterable[Message], *, model: str | None = None
) -> tuple[str | None, list[dict[str, Any]]]:
    """Our history as (system prompt, Messages API messages) for `model`. See the module
    docstring."""
    system: list[str] = []
    wire: list[dict[str, Any]] = []
    for message in messages:
        if message.display_only:
            continue
        if message.role is Role.SYSTEM:
            if message.content:
                system.append(message.content)
            continue
        role, blocks = message_blocks(message, model)
        if not blocks:
            continue
        if wire and wire[-1]["role"] == role:
            wire[-1]["content"].extend(b for b in blocks if b["type"] not in _THINKING_TYPES)
        else:
            wire.append({"role": role, "content": blocks})
    return ("\n\n".join(system) or None), wire


def tools_to_anthropic(tools: Iterable[ToolSchema]) -> list[dict[str, Any]]:
    return [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]


def tool_choice_to_anthropic(choice: str) -> dict[str, Any] | None:
    """``auto`` → None (the default), ``required`` → any, ``none``, or one tool by name."""
    if choice == "auto":
        return None
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    return {"type": "tool", "name": choice}


@dataclass(frozen=True, slots=True)
class RequestOptions:
    model: str
    max_tokens: int = 4096
    temperature: float | None = None
    thinking_budget: int | None = None


def build_request(
    messages: Iterable[Message],
    tools: Sequence[ToolSchema],
    settings: ModelSettings | None,
    options: RequestOptions,
) -> dict[str, Any]:
    """The keyword arguments of one streamed ``messages.create`` call.

    The SDK has no ``temperature`` argument, so it travels in ``extra_body``. With thinking
    on, temperature is not sent (the API only allows the default then), and ``max_tokens``
    is raised above the thinking budget when it is not already (the API requires it). A
    temperature above `MAX_TEMPERATURE` is sent as that. Without `tools`, the history's
    tool calls and results go as text (`connectors.tool_history`).
    """
    history = tuple(messages)
    if not tools and has_tool_history(history):
        history = tool_history_as_text(history)
    system, wire = messages_to_anthropic(history, model=options.model)
    max_tokens = options.max_tokens
    temperature = options.temperature
    if settings is not None:
        max_tokens = settings.max_tokens or max_tokens
        temperature = settings.temperature if settings.temperature is not None else temperature
    request: dict[str, Any] = {"model": options.model, "max_tokens": max_tokens, "messages": wire}
    if system:
        request["system"] = system
    if options.thinking_budget:
        request["thinking"] = {"type": "enabled", "budget_tokens": options.thinking_budget}
        if max_tokens <= options.thinking_budget:
            request["max_tokens"] = options.thinking_budget + max_tokens
        temperature = None
    if temperature is not None:
        # The page offers 0 to 2 (OpenAI's range); above 1 the API refuses every request.
        request["extra_body"] = {"temperature": min(temperature, MAX_TEMPERATURE)}
    if tools:
        request["tools"] = tools_to_anthropic(tools)
        choice = tool_choice_to_anthropic(settings.tool_choice if settings else "auto")
        if choice is not None:
            request["tool_choice"] = choice
    return request


_ERROR_TYPES: Mapping[str, type[ModelError]] = MappingProxyType(
    {
        "overloaded_error": ModelServerError,
        "api_error": ModelServerError,
        "rate_limit_error": ModelRateLimited,
        "authentication_error": ModelAuthError,
        "permission_error": ModelAuthError,
        "not_found_error": ModelNotFound,
    }
)


def stream_error(
    error_type: str, message: str, *, provider: str, where: str = "mid-stream"
) -> ModelError:
    """The ModelError for an ``error`` event inside a stream (or `where` it came), by its
    ``error.type``."""
    kind = _ERROR_TYPES.get(error_type, ModelError)
    text = f"{provider}: the server reported {error_type or 'an error'} {where}: {message}"
    return kind(text, provider=provider)


def error_words(text: str) -> str:
    """What the error object of a JSON document says: its ``message``, or the error itself
    when it is a bare string (LM Studio's ``{"error": "Unexpected endpoint ..."}``); ""
    when the document holds no error."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        return ""
    error = value.get("error") if isinstance(value, Mapping) else None
    if isinstance(error, Mapping):
        return str(error.get("message") or "")
    return error if isinstance(error, str) else ""


def body_error(text: str, *, provider: str) -> ModelError:
    """The error a JSON document sent instead of the event stream stands for: Anthropic's
    ``{"type": "error", "error": {"type": ..., "message": ...}}`` or any ``{"error": ...}``
    by its type (`stream_error`); anything else (a whole message from a server that ignored
    ``stream``) a ModelResponseError quoting the body."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    error = value.get("error") if isinstance(value, Mapping) else None
    if not error:
        return ModelResponseError(
            f"{provider}: the server answered with no event stream: {shorten(text)}",
            provider=provider,
        )
    if not isinstance(error, Mapping):
        error = {"message": str(error)}
    return stream_error(
        str(error.get("type") or ""),
        shorten(str(error.get("message") or json.dumps(error))),
        provider=provider,
        where="instead of a stream",
    )


@dataclass(slots=True)
class _Block:
    type: str
    pieces: dict[str, list[str]] = field(default_factory=dict)
    """What its deltas carried, by what they are: ``text``, ``thinking``, ``tool_use``
    (input JSON). Kept apart even in one block: a few compatible servers send a text delta
    to the index of a thinking block, and the text must stay the answer."""
    id: str = ""
    name: str = ""
    start_input: Any = None
    signature: list[str] = field(default_factory=list)
    data: str = ""


class EventAccumulator:
    """Assembles a streamed Messages API response from its raw events.

    Text deltas and thinking deltas are returned as they arrive; tool_use blocks are
    assembled from their ``input_json_delta`` pieces (kept as raw text, valid JSON or not).
    Usage: input tokens from ``message_start`` (cache reads and writes included), output
    tokens from the last ``message_delta``. `complete` turns true on ``message_stop``.
    """

    def __init__(self, *, max_chars: int | None = None, provider: str = "anthropic") -> None:
        self.max_chars = max_chars
        self.provider = provider
        self._blocks: dict[int, _Block] = {}
        self._chars = 0
        self.events = 0
        self.complete = False
        self.model: str | None = None
        self.stop_reason: str | None = None
        self.input_tokens = 0
        self.output_tokens = 0

    def feed(self, event: object) -> list[StreamDelta]:
        if not isinstance(event, Mapping):
            raise ModelResponseError(f"expected a JSON object in the stream, got {event!r:.80}")
        self.events += 1
        kind = event.get("type")
        if kind == "message_start":
            self._message_start(event.get("message") or {})
        elif kind == "content_block_start":
            self._block_start(event)
        elif kind == "content_block_delta":
            return self._block_delta(event)
        elif kind == "message_delta":
            self._message_delta(event)
        elif kind == "message_stop":
            self.complete = True
        elif kind == "error":
            error = event.get("error") or {}
            raise stream_error(
                str(error.get("type", "")), str(error.get("message", "")), provider=self.provider
            )
        return []

    def _message_start(self, message: Mapping[str, Any]) -> None:
        if isinstance(message.get("model"), str):
            self.model = message["model"]
        usage = message.get("usage")
        if isinstance(usage, Mapping):
            self.input_tokens = _input_tokens(usage) or self.input_tokens
            self.output_tokens = _count(usage, "output_tokens") or self.output_tokens

    def _message_delta(self, event: Mapping[str, Any]) -> None:
        delta = event.get("delta")
        if isinstance(delta, Mapping) and delta.get("stop_reason"):
            self.stop_reason = str(delta["stop_reason"])
        usage = event.get("usage")
        if isinstance(usage, Mapping):
            self.input_tokens = _input_tokens(usage) or self.input_tokens
            self.output_tokens = _count(usage, "output_tokens") or self.output_tokens

    def _block(self, event: Mapping[str, Any], kind: str) -> _Block:
        index = event.get("index", 0)
        if not isinstance(index, int):
            raise ModelResponseError("a stream event's block index is not a number")
        block = self._blocks.get(index)
        if block is None:
            block = self._blocks[index] = _Block(type=kind)
        return block

    def _block_start(self, event: Mapping[str, Any]) -> None:
        raw = event.get("content_block")
        if not isinstance(raw, Mapping):
            raise ModelResponseError("content_block_start without a content block")
        kind = str(raw.get("type", ""))
        block = self._block(event, kind)
        block.type = kind
        if kind == "tool_use":
            block.id = str(raw.get("id") or "")
            block.name = str(raw.get("name") or "")
            block.start_input = raw.get("input")
        elif kind == "thinking" and raw.get("signature"):
            block.signature.append(str(raw["signature"]))
        elif kind == "redacted_thinking":
            block.data = str(raw.get("data") or "")

    def _block_delta(self, event: Mapping[str, Any]) -> list[StreamDelta]:
        delta = event.get("delta")
        if not isinstance(delta, Mapping):
            return []
        kind = delta.get("type")
        if kind == "text_delta":
            piece = str(delta.get("text") or "")
            self._append(self._block(event, "text"), "text", piece)
            return [ModelTextDelta(text=piece)] if piece else []
        if kind == "thinking_delta":
            piece = str(delta.get("thinking") or "")
            self._append(self._block(event, "thinking"), "thinking", piece)
            return [ModelReasoningDelta(text=piece)] if piece else []
        if kind == "input_json_delta":
            piece = str(delta.get("partial_json") or "")
            self._append(self._block(event, "tool_use"), "tool_use", piece)
        elif kind == "signature_delta":
            self._block(event, "thinking").signature.append(str(delta.get("signature") or ""))
        return []  # signatures and citations: nothing to show

    def _append(self, block: _Block, kind: str, piece: str) -> None:
        if not piece:
            return
        self._chars += len(piece)
        if self.max_chars is not None and self._chars > self.max_chars:
            raise ModelResponseError(
                f"{self.provider}: the model's response exceeded the size cap of "
                f"{self.max_chars:,} characters",
                provider=self.provider,
            )
        block.pieces.setdefault(kind, []).append(piece)

    def _joined(self, kind: str) -> str:
        """Every piece of `kind` (``text``, ``thinking``), in block order."""
        return "".join("".join(b.pieces.get(kind, ())) for _, b in sorted(self._blocks.items()))

    def tool_calls(self) -> tuple[ToolCall, ...]:
        calls = []
        for _, block in sorted(self._blocks.items()):
            if block.type != "tool_use":
                continue
            arguments = "".join(block.pieces.get("tool_use", ()))
            if not arguments:
                start = block.start_input
                arguments = json.dumps(start) if isinstance(start, Mapping) and start else "{}"
            if not block.id:
                block.id = "toolu_" + new_id()[:24]
            calls.append(ToolCall(id=block.id, name=block.name, arguments=arguments))
        return tuple(calls)

    def thinking_blocks(self) -> list[dict[str, Any]]:
        """The signed thinking and redacted thinking blocks, in order, to send back."""
        blocks: list[dict[str, Any]] = []
        for _, block in sorted(self._blocks.items()):
            signature = "".join(block.signature)
            if block.type == "thinking" and signature:
                blocks.append(
                    {
                        "type": "thinking",
                        "thinking": "".join(block.pieces.get("thinking", ())),
                        "signature": signature,
                    }
                )
            elif block.type == "redacted_thinking" and block.data:
                blocks.append({"type": "redacted_thinking", "data": block.data})
        return blocks

    def response(self, *, model: str | None = None) -> ModelResponse:
        reasoning = self._joined("thinking")
        stop = self.stop_reason
        thinking = self.thinking_blocks()
        # Thinking goes back to the model that was asked (what the next request names), not
        # the dated id the API reports.
        signer = model or self.model
        return ModelResponse(
            text=self._joined("text"),
            reasoning=reasoning or None,
            tool_calls=self.tool_calls(),
            usage=Usage(
                input_tokens=self.input_tokens, output_tokens=self.output_tokens, requests=1
            ),
            finish_reason=STOP_REASONS.get(stop, stop) if stop else None,
            model=self.model or model,
            provider_data=(
                {PROVIDER_DATA_KEY: {"model": signer, "thinking": thinking}} if thinking else {}
            ),
        )


def _count(usage: Mapping[str, Any], key: str) -> int:
    value = usage.get(key)
    return value if isinstance(value, int) and value >= 0 else 0


def _input_tokens(usage: Mapping[str, Any]) -> int:
    return sum(
        _count(usage, key)
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
