"""Pure mapping between our schema and the OpenAI Chat Completions wire format.

No SDK, no I/O: `messages_to_openai` and `tools_to_openai` build request dicts, and
`StreamAccumulator` turns streamed chunk dicts (or SDK chunks' ``model_dump()``) into our
deltas and one final `ModelResponse`. Works for OpenAI and OpenAI-compatible servers
(llama.cpp, vLLM, Ollama, LM Studio, DeepSeek, Mistral): reasoning arrives there as
``reasoning_content`` or ``reasoning`` delta fields, as ``thinking`` parts of a content
sent as a list of parts, or inside a ``<think>`` that opens the content
(`connectors.think_tags`). `body_as_chunk` reads the JSON document
a server sent instead of a stream (what its error objects and refusals say is
`connectors.openai_errors`). Finish reasons are read as OpenAI's words (`finish_reason`).

The OpenAI service and the compatible servers differ in a few things, all decided by one
check, `is_openai_service` (the host is api.openai.com): only the service takes
``max_completion_tokens`` (its o-series and gpt-5 models refuse ``max_tokens``, which older
compatible servers know alone), and only the service takes system messages after the first
turn and user messages in a row; other servers get those folded into user turns and merged
(`RequestOptions.system_anywhere`, `consecutive_user_turns`; `connectors.chat_templates`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Final, Literal
from urllib.parse import urlsplit

from connectors.chat_templates import system_first_only, user_turns_merged
from connectors.resilience import shorten
from connectors.think_tags import ThinkTags, template_thinking
from connectors.wire_names import wire_id, wire_name
from gui_agent.exceptions import ModelResponseError
from schema import (
    ImagePart,
    Message,
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

REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Delta fields OpenAI-compatible servers use for the model's reasoning text."""

StreamDelta = ModelTextDelta | ModelReasoningDelta

MAX_CALL_ID_CHARS = 40
"""OpenAI refuses longer tool-call ids (ids from other vendors are shortened to fit)."""

MAX_TOOL_NAME_CHARS = 64

OPENAI_HOST: Final = "api.openai.com"

MaxTokensField = Literal["max_tokens", "max_completion_tokens"]

FINISH_REASONS: Final[Mapping[str, str]] = MappingProxyType(
    {
        **{word: word for word in ("stop", "length", "tool_calls", "content_filter")},
        "model_length": "length",
        "max_tokens": "length",
        "max_output_tokens": "length",
        "end_turn": "stop",
        "stop_sequence": "stop",
        "tool_use": "tool_calls",
    }
)
"""Finish reasons other vendors' words stand for, by their lower case, as the rest of
GuiAgent reads them: Mistral's ``model_length`` (the reply filled the model's context),
and the Claude and Gemini words proxies pass through (``max_tokens``, ``MAX_TOKENS``,
``end_turn``, ``tool_use``), and OpenAI's own words in capitals. A reply cut off under
any of them is ``length``: the agent notes it and does not run a call whose arguments
were cut off."""


def finish_reason(said: object) -> str:
    """A finish reason as GuiAgent reads it (`FINISH_REASONS`); others pass through."""
    text = str(said)
    return FINISH_REASONS.get(text.lower(), text)


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


PROVIDER_DATA_KEY: Final = "openai"
"""The key of this mapping's part of `ModelResponse.provider_data`: what a reply's tool
calls carried besides their call (``extra_content``: Gemini's thought signatures), by call
id, and the model that wrote them."""


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


def body_as_chunk(text: str, *, provider: str = "openai") -> Mapping[str, Any]:
    """The JSON document a server sent instead of the stream it was asked for, as one chunk.

    An error object (``{"error": ...}``) is returned as it is: the caller raises it. A whole
    chat completion (a server that ignored ``stream``) becomes a chunk whose choices carry
    their message as the delta. Anything else raises ModelResponseError quoting the body.
    """
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if isinstance(value, Mapping):
        if value.get("error"):
            return value
        choices = value.get("choices")
        if isinstance(choices, list):
            return {**value, "choices": [_message_as_delta(c) for c in choices]}
    raise ModelResponseError(
        f"{provider}: the server answered with neither a stream nor an error: {shorten(text)}",
        provider=provider,
    )


def _message_as_delta(choice: object) -> object:
    if isinstance(choice, Mapping) and "delta" not in choice and "message" in choice:
        return {**choice, "delta": choice["message"]}
    return choice


@dataclass(slots=True)
class _PendingCall:
    id: str
    name: str
    arguments: str
    extra: dict[str, Any] | None = None
    """The call's ``extra_content`` (Gemini's thought signature), to send back with it."""


class StreamAccumulator:
    """Assembles a streamed chat completion.

    Feed it each chunk as a dict; it returns the text / reasoning deltas to show and keeps
    tool-call pieces (assembled by ``index``; parallel calls supported, also when a server
    gives them all one index: see `_call_for`), usage (from the
    final ``stream_options`` chunk or wherever a server puts it) and the finish reason.
    `response()` builds the final `ModelResponse`. Tool-call arguments stay raw text, valid
    JSON or not: the agent loop reports a parse error to the model. Calls without an id get a
    generated one. More than `max_chars` characters of output raise `ModelResponseError`.

    A text or reasoning piece that ends in a high surrogate (a server that JSON-escapes a
    character outside the BMP as ``\\ud83d`` in one chunk and ``\\ude00`` in the next) keeps
    it back until the next piece of its channel, so the pair is rejoined into one character
    instead of becoming two U+FFFD. Checking costs one comparison per piece. Tool-call
    arguments, never shown while streaming, have their pairs joined once, at the end.

    Reasoning inside a ``<think>`` that opens the content becomes reasoning deltas
    (`connectors.think_tags`); the last of it may be held back until `finish`. With
    `think_opened` (the model's chat template opens the ``<think>`` itself) the content
    starts as reasoning; `template_opened_think` says, after `response`, whether the reply
    showed that it does. What a tool call carries besides the call (``extra_content``:
    Gemini's thought signatures) goes in the response's ``provider_data``, to be sent back
    with the call (`call_extras`).
    """

    def __init__(
        self,
        *,
        max_chars: int | None = None,
        provider: str = "openai",
        new_call_id: Callable[[], str] = lambda: "call_" + new_id()[:24],
        think_opened: bool = False,
    ) -> None:
        self.max_chars = max_chars
        self.provider = provider
        self._new_call_id = new_call_id
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._held: dict[str, str] = {}
        self._calls: dict[tuple[int, int], _PendingCall] = {}
        """Calls by (wire index, how many calls that index stood for before)."""
        self._at_index: dict[int, tuple[int, int]] = {}
        """The call each wire index stands for now."""
        self._saw_tool_calls = False
        self._think_opened = think_opened
        self._think = ThinkTags(opened=think_opened)
        self._tag_reasoning: list[str] = []
        """Reasoning found inside ``<think>`` tags in the content (see `response`)."""
        self.template_opened_think: bool | None = None
        """Set by `response`: whether the chat template opened this reply's thinking (its
        content had a ``</think>`` and no ``<think>``); None for a reply without text."""
        self._chars = 0
        self.chunks = 0
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self.model: str | None = None

    @property
    def text(self) -> str:
        return "".join(self._text) + self._held.get("text", "")

    def feed(self, chunk: object) -> list[StreamDelta]:
        """Take one chunk; return the deltas it adds, in order."""
        if not isinstance(chunk, Mapping):
            raise ModelResponseError(f"expected a JSON object in the stream, got {chunk!r:.80}")
        self.chunks += 1
        if isinstance(chunk.get("model"), str) and chunk["model"]:
            self.model = chunk["model"]
        usage = chunk.get("usage")
        if isinstance(usage, Mapping):
            self.usage = _usage(usage)
        choices = chunk.get("choices") or []
        if not isinstance(choices, list):
            raise ModelResponseError("the stream's `choices` is not a list")
        out: list[StreamDelta] = []
        for choice in choices:
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if isinstance(delta, Mapping):
                out.extend(self._feed_delta(delta))
            if choice.get("finish_reason"):
                self.finish_reason = finish_reason(choice["finish_reason"])
        return out

    def _feed_delta(self, delta: Mapping[str, Any]) -> list[StreamDelta]:
        out: list[StreamDelta] = []
        for name in REASONING_FIELDS:
            piece = delta.get(name)
            if isinstance(piece, str) and piece:
                out.extend(self._reasoning_piece(piece))
                break
        for name in ("content", "refusal"):
            piece = delta.get(name)
            if isinstance(piece, list):
                out.extend(self._content_parts(piece))
            elif isinstance(piece, str) and piece:
                out.extend(self._text_piece(piece))
        tool_calls = delta.get("tool_calls")
        if isinstance(tool_calls, list) and tool_calls:
            self._saw_tool_calls = True
            for position, part in enumerate(tool_calls):
                if isinstance(part, Mapping):
                    self._feed_tool_call(part, position)
        legacy = delta.get("function_call")
        if isinstance(legacy, Mapping) and not self._saw_tool_calls:
            # Only servers that speak nothing newer: llama.cpp sends every piece in both
            # fields, and reading both would double the arguments.
            self._feed_tool_call({"index": 0, "function": legacy}, 0)
        return out

    def _text_piece(self, piece: str) -> list[StreamDelta]:
        if not (piece := self._whole("text", piece)):
            return []
        return self._content(self._think.feed(piece))

    def _content(self, pieces: list[tuple[bool, str]]) -> list[StreamDelta]:
        """Text pieces, and the reasoning a ``<think>`` opening the content holds."""
        out: list[StreamDelta] = []
        for reasoning, piece in pieces:
            self._grow(len(piece))
            if reasoning:
                self._tag_reasoning.append(piece)
                out.append(ModelReasoningDelta(text=piece))
            else:
                self._text.append(piece)
                out.append(ModelTextDelta(text=piece))
        return out

    def finish(self) -> list[StreamDelta]:
        """The deltas held back at the end of the stream (the start of what could have been
        a ``<think>`` tag); `response` includes them either way."""
        return self._content(self._think.finish())

    def _reasoning_piece(self, piece: str) -> list[StreamDelta]:
        if not (piece := self._whole("reasoning", piece)):
            return []
        self._grow(len(piece))
        self._reasoning.append(piece)
        return [ModelReasoningDelta(text=piece)]

    def _content_parts(self, parts: list[Any], *, reasoning: bool = False) -> list[StreamDelta]:
        """Content sent as a list of parts (Mistral's API): ``text`` parts, and ``thinking``
        parts holding the reasoning (as text parts, or a string)."""
        out: list[StreamDelta] = []
        for part in parts:
            if not isinstance(part, Mapping):
                continue
            text, thinking = part.get("text"), part.get("thinking")
            if part.get("type") == "text" and isinstance(text, str) and text:
                out.extend(self._reasoning_piece(text) if reasoning else self._text_piece(text))
            elif part.get("type") == "thinking" and isinstance(thinking, list):
                out.extend(self._content_parts(thinking, reasoning=True))
            elif part.get("type") == "thinking" and isinstance(thinking, str) and thinking:
                out.extend(self._reasoning_piece(thinking))
        return out

    def _whole(self, channel: str, piece: str) -> str:
        """`piece` as whole characters: after the high surrogate held back from the channel's
        last piece (joined with a low surrogate starting this one), less a high surrogate it
        ends in (held back for the next piece)."""
        held = self._held.pop(channel, "") if self._held else ""
        if held:
            piece = held + piece
            if len(piece) > 1 and "\udc00" <= piece[1] <= "\udfff":
                piece = _pair(piece[0], piece[1]) + piece[2:]
        if "\ud800" <= piece[-1] <= "\udbff":
            self._held[channel] = piece[-1]
            piece = piece[:-1]
        return piece

    def _feed_tool_call(self, part: Mapping[str, Any], position: int) -> None:
        call_id = part.get("id") if isinstance(part.get("id"), str) else None
        function = part.get("function")
        function = function if isinstance(function, Mapping) else {}
        name = function.get("name")
        name = name if isinstance(name, str) else ""
        pending = self._call_for(part.get("index"), call_id, bool(name), position)
        if call_id and not pending.id:
            pending.id = call_id
        if name and name != pending.name:
            pending.name = name if not pending.name else pending.name + name
        arguments = function.get("arguments")
        if isinstance(arguments, Mapping):  # a few servers send an object, not JSON text
            arguments = json.dumps(arguments)
        if isinstance(arguments, str) and arguments:
            self._grow(len(arguments))
            pending.arguments += arguments
        extra = part.get("extra_content")
        if isinstance(extra, Mapping) and extra:
            pending.extra = {**(pending.extra or {}), **extra}

    def _call_for(
        self, index: object, call_id: str | None, named: bool, position: int
    ) -> _PendingCall:
        """The call a tool-call piece belongs to, new or begun.

        By its ``index``; but a piece that names a function under another id than the call
        its index stands for starts a new call (Ollama and some proxies give every parallel
        call index 0), while one without a name continues it (some servers change the id
        between the pieces of one call). Without an index: a new id starts a new call,
        else the piece continues the call of its id, or the last one.
        """
        if not isinstance(index, int):
            known = next((i for i, c in self._calls.items() if call_id and c.id == call_id), None)
            if known is not None:
                return self._calls[known]
            if call_id or not self._calls:
                index = len(self._calls) + position
            else:
                index = max(self._calls)[0]
        key = self._at_index.get(index)
        if key is not None:
            current = self._calls[key]
            if not (named and call_id and current.id and call_id != current.id):
                return current
        key = (index, 0 if key is None else key[1] + 1)
        self._at_index[index] = key
        pending = self._calls[key] = _PendingCall(id="", name="", arguments="")
        return pending

    def _grow(self, chars: int) -> None:
        self._chars += chars
        if self.max_chars is not None and self._chars > self.max_chars:
            raise ModelResponseError(
                f"{self.provider}: the model's response exceeded the size cap of "
                f"{self.max_chars:,} characters",
                provider=self.provider,
            )

    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The calls in index order. A call without an id, or with the id of an earlier call
        of this reply (some servers repeat one), gets a generated id: results are matched
        to calls by id, and two calls under one id would share one result."""
        calls: list[ToolCall] = []
        seen: set[str] = set()
        for key in sorted(self._calls):
            pending = self._calls[key]
            if not pending.id or pending.id in seen:
                pending.id = self._new_call_id()
            seen.add(pending.id)
            arguments = _pairs_joined(pending.arguments) or "{}"
            calls.append(ToolCall(id=pending.id, name=pending.name, arguments=arguments))
        return tuple(calls)

    def _text_and_thinking(self) -> tuple[str, str]:
        """The reply's text, and the reasoning its content held in ``<think>`` tags.

        A reply whose thinking the chat template opened (`think_tags.template_thinking`)
        is split here, whole, when it streamed as text (nobody could know before its
        ``</think>``). Streamed as reasoning from the start (`think_opened`), a reply that
        never closed it was no thinking after all: it is the text."""
        text, thinking = self.text, "".join(self._tag_reasoning)
        if self._think_opened and not self._think.closed:
            text, thinking = thinking + text, ""
        elif not thinking and (split := template_thinking(text)) is not None:
            thinking, text = split
            self.template_opened_think = True
        if (text.strip() or thinking) and self.template_opened_think is None:
            self.template_opened_think = self._think_opened and self._think.closed
        return text, thinking.rstrip()

    def response(self, *, model: str | None = None) -> ModelResponse:
        """The whole reply so far as the final stream item."""
        self.finish()
        usage = self.usage if self.usage is not None else Usage(requests=1)
        text, thinking = self._text_and_thinking()
        reasoning = "".join(self._reasoning) + self._held.get("reasoning", "") + thinking
        calls = self.tool_calls()
        extras = {p.id: p.extra for p in self._calls.values() if p.extra}
        # What the calls carried goes back to the model that was asked (what the next
        # request names, `call_extras`), not the id the server reports.
        signer = model or self.model
        return ModelResponse(
            text=text,
            reasoning=reasoning or None,
            tool_calls=calls,
            usage=usage,
            finish_reason=self.finish_reason,
            model=self.model or model,
            provider_data=(
                {PROVIDER_DATA_KEY: {"model": signer, "extra_content": extras}} if extras else {}
            ),
        )


def _pair(high: str, low: str) -> str:
    """The character a UTF-16 surrogate pair stands for."""
    return chr(0x10000 + ((ord(high) - 0xD800) << 10) + (ord(low) - 0xDC00))


def _pairs_joined(text: str) -> str:
    """`text` with each surrogate pair in it made one character (lone halves stay)."""
    if text.isascii():
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _usage(raw: Mapping[str, Any]) -> Usage:
    def count(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) and value >= 0 else 0

    return Usage(
        input_tokens=count("prompt_tokens"), output_tokens=count("completion_tokens"), requests=1
    )
