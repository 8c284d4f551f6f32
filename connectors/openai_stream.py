"""Streamed Chat Completions chunks as our deltas and one final `ModelResponse`.

Pure; no SDK, no I/O. `StreamAccumulator` turns streamed chunk dicts (or SDK chunks'
``to_dict()``) into our deltas and one final `ModelResponse`. Works for OpenAI and
OpenAI-compatible servers (llama.cpp, vLLM, Ollama, LM Studio, DeepSeek, Mistral):
reasoning arrives there as ``reasoning_content`` or ``reasoning`` delta fields, as
``thinking`` parts of a content sent as a list of parts, or inside a ``<think>`` that opens
the content (`connectors.think_tags`); tool calls come in pieces
(`connectors.openai_tool_calls`). `body_as_chunk` reads the JSON document a server sent
instead of a stream (what its error objects and refusals say is `connectors.openai_errors`).
Finish reasons are read as OpenAI's words (`finish_reason`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, Final

from connectors.openai_tool_calls import PROVIDER_DATA_KEY, ToolCallPieces
from connectors.resilience import shorten
from connectors.think_tags import ThinkTags, template_thinking
from gui_agent.exceptions import ModelResponseError
from schema import (
    ModelReasoningDelta,
    ModelResponse,
    ModelTextDelta,
    ToolCall,
    Usage,
    new_id,
)

__all__ = [
    "FINISH_REASONS",
    "REASONING_FIELDS",
    "StreamAccumulator",
    "StreamDelta",
    "body_as_chunk",
    "finish_reason",
]

REASONING_FIELDS = ("reasoning_content", "reasoning")
"""Delta fields OpenAI-compatible servers use for the model's reasoning text."""

StreamDelta = ModelTextDelta | ModelReasoningDelta

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


class StreamAccumulator:
    """Assembles a streamed chat completion.

    Feed it each chunk as a dict; it returns the text / reasoning deltas to show and keeps
    tool-call pieces (assembled by ``index``; parallel calls supported, also when a server
    gives them all one index: see `connectors.openai_tool_calls`), usage (from the
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
    with the call (`openai_mapping.call_extras`).
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
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._held: dict[str, str] = {}
        self._calls = ToolCallPieces(new_call_id=new_call_id, grow=self._grow)
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
        self._refused = False
        """The model sent a refusal (OpenAI's `refusal` field): the reply is one the content
        filter stopped, whatever the finish reason says (`stop`), as Claude's `refusal` is."""

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
            else:
                continue
            if name == "refusal":  # shown as the reply's text, and the reply marked refused
                self._refused = True
        tool_calls = delta.get("tool_calls")
        if isinstance(tool_calls, list) and tool_calls:
            self._saw_tool_calls = True
            for position, part in enumerate(tool_calls):
                if isinstance(part, Mapping):
                    self._calls.feed(part, position)
        legacy = delta.get("function_call")
        if isinstance(legacy, Mapping) and not self._saw_tool_calls:
            # Only servers that speak nothing newer: llama.cpp sends every piece in both
            # fields, and reading both would double the arguments.
            self._calls.feed({"index": 0, "function": legacy}, 0)
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
        return self._calls.calls()

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
        extras = self._calls.extras()
        # What the calls carried goes back to the model that was asked (what the next
        # request names, `call_extras`), not the id the server reports.
        signer = model or self.model
        return ModelResponse(
            text=text,
            reasoning=reasoning or None,
            tool_calls=calls,
            usage=usage,
            finish_reason=(
                "content_filter"
                if self._refused and self.finish_reason in (None, "stop")
                else self.finish_reason
            ),
            model=self.model or model,
            provider_data=(
                {PROVIDER_DATA_KEY: {"model": signer, "extra_content": extras}} if extras else {}
            ),
        )


def _pair(high: str, low: str) -> str:
    """The character a UTF-16 surrogate pair stands for."""
    return chr(0x10000 + ((ord(high) - 0xD800) << 10) + (ord(low) - 0xDC00))


def _usage(raw: Mapping[str, Any]) -> Usage:
    def count(key: str) -> int:
        value = raw.get(key)
        return value if isinstance(value, int) and value >= 0 else 0

    return Usage(
        input_tokens=count("prompt_tokens"), output_tokens=count("completion_tokens"), requests=1
    )
