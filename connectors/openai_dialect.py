"""What one OpenAI-compatible server takes, as its host and its refusals have shown.

Pure; no SDK, no I/O. A `ServerDialect` starts from the host (`for_server`): only the
OpenAI service itself (api.openai.com) gets ``max_completion_tokens``, system messages
after the history as they are, and user messages in a row; any other server gets
``max_tokens``, and system messages folded into user turns and consecutive user turns
merged (`connectors.chat_templates`).

Then it learns (`learn`): what a server's refusal says it cannot take (tools, images, a
temperature, call ids other than Mistral's 9 characters, replies with neither text nor
tool calls: `connectors.openai_errors`) is left out or rewritten, and what it says it
lacks (a thinking model's reasoning with its tool calls) is added, in the refused request
and in every later one (`as_learned`). So is a request without tools whose history holds
tool calls and results, to a server that refuses that (a gateway in front of Anthropic or
Bedrock: "The toolConfig field must be defined when using toolUse and toolResult content
blocks"): its history goes with them told in words (`connectors.tool_history`).
`connectors.openai.OpenAIProvider` keeps one and shows its flags as its own attributes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from connectors.openai_errors import (
    refuses_call_ids,
    refuses_empty_reply,
    refuses_images,
    refuses_missing_reasoning,
    refuses_temperature,
    refuses_tools,
    with_nine_char_ids,
    without_images,
)
from connectors.openai_mapping import MaxTokensField, RequestOptions, build_request
from connectors.tool_history import has_tool_history, tool_history_as_text, tool_refusal
from schema import Message

__all__ = ["ServerDialect"]


@dataclass(slots=True)
class ServerDialect:
    """What one server takes; the request options and rewrites that follow from it."""

    system_anywhere: bool = True
    """False: a system message that follows the history goes as a user turn (see
    `connectors.chat_templates`)."""
    consecutive_user_turns: bool = True
    """False: user messages in a row go as one (see `connectors.chat_templates`)."""
    max_tokens_field: MaxTokensField = "max_tokens"
    stream_usage: bool = True
    """False once the server refused ``stream_options``: usage is no longer asked for."""
    tools_refused: bool = False
    """True once the server said the model cannot take tools (Ollama's "does not support
    tools", llama.cpp without --jinja): its requests go without them from then on."""
    images_refused: bool = False
    """True once the server said the model cannot take images (llama.cpp without
    --mmproj, a text model): its requests carry a note in their place from then on
    (a history holding one image would otherwise be refused at every message)."""
    temperature_refused: bool = False
    """True once the server said the model takes no temperature but its default (o3,
    o4-mini, gpt-5): the session's temperature is not sent to it from then on."""
    reasoning_back: bool = False
    """True once the server said the history's tool-call messages must carry their
    reasoning (Kimi, DeepSeek and GLM thinking models in a tool loop): they carry it
    as ``reasoning_content`` from then on."""
    nine_char_call_ids: bool = False
    """True once the server said it takes only call ids of 9 letters or digits (Mistral's
    API, vLLM serving a Mistral model): every call id goes rewritten to fit from then
    on (`openai_errors.with_nine_char_ids`; the history keeps them as they were)."""
    empty_replies_refused: bool = False
    """True once the server refused an assistant message with neither text nor tool
    calls (Mistral's API, vLLM serving a Mistral model; the history holds one after a
    reply stopped before its first word, or a thinking model's reply that ran out of
    tokens while thinking): such messages are left out from then on."""
    tool_history_refused: bool = False
    """True once the server refused a request without tools whose history held tool
    calls and results (a gateway in front of Anthropic or Bedrock): such requests go
    with them told in words from then on (`connectors.tool_history`)."""
    template_opens_think: bool = False
    """True while the model's replies show that its chat template opens ``<think>``
    itself (content that starts inside the reasoning and ends it with ``</think>``):
    its next replies stream their reasoning as reasoning from the first word. A reply
    with text and no ``</think>`` sets it back."""

    @classmethod
    def for_server(cls, *, openai_service: bool) -> ServerDialect:
        """The dialect of a server before it refused anything: `openai_service` (the host
        is api.openai.com) or any compatible one."""
        return cls(
            system_anywhere=openai_service,
            consecutive_user_turns=openai_service,
            max_tokens_field="max_completion_tokens" if openai_service else "max_tokens",
        )

    def options(
        self, model: str, *, temperature: float | None = None, max_tokens: int | None = None
    ) -> RequestOptions:
        """The request options for `model` with these defaults, in this dialect."""
        return RequestOptions(
            model=model,
            temperature=temperature,
            max_tokens=max_tokens,
            max_tokens_field=self.max_tokens_field,
            stream_usage=self.stream_usage,
            system_anywhere=self.system_anywhere,
            consecutive_user_turns=self.consecutive_user_turns,
            reasoning_back=self.reasoning_back,
            empty_replies=not self.empty_replies_refused,
        )

    def history(self, history: tuple[Message, ...], *, with_tools: bool) -> tuple[Message, ...]:
        """`history` as this server takes it: for a request without tools, to a server that
        refused tool calls and results in one, with them told in words."""
        if with_tools or not self.tool_history_refused:
            return history
        return tool_history_as_text(history)

    def as_learned(self, body: dict[str, Any]) -> None:
        """`body` changed as this server's refusals taught (see `learn`)."""
        if self.tools_refused:
            _without_tools(body)
        if self.images_refused:
            body["messages"] = without_images(body["messages"]) or body["messages"]
        if self.temperature_refused:
            body.pop("temperature", None)
        if self.nine_char_call_ids:
            body["messages"] = with_nine_char_ids(body["messages"])

    def learn(
        self, body: dict[str, Any], said: str, history: tuple[Message, ...], *, model: str
    ) -> str:
        """Change `body` (a request to `model`) as a refusal in the words `said` asks, and
        remember it for every later request; what was changed, or "" when `said` refuses
        nothing of the kinds a server may lack: tools, when its words say the model or
        server cannot take them (`tools_refused`); images, each replaced by a note saying
        so (`images_refused`); a temperature, when the model takes only its default
        (`temperature_refused`: OpenAI's reasoning models); call ids other than 9 letters
        or digits, rewritten (`nine_char_call_ids`: Mistral's validator); the reasoning of
        the `history`'s tool-call messages, when a thinking model wants it back
        (`reasoning_back`); the `history`'s tool calls and results, told in words, when the
        request has no tools and the server takes none without them
        (`tool_history_refused`); the `history`'s empty replies, when the server refuses
        them (`empty_replies_refused`)."""
        if "tools" in body and refuses_tools(said):
            _without_tools(body)
            self.tools_refused = True
            return "the server refused tools; chatting without them"
        if refuses_images(said) and (textual := without_images(body["messages"])):
            body["messages"] = textual
            self.images_refused = True
            return "the model cannot take images; sending a note in their place"
        if "temperature" in body and refuses_temperature(said):
            body.pop("temperature")
            self.temperature_refused = True
            return "the model takes no temperature; asking without it"
        if not self.nine_char_call_ids and refuses_call_ids(said):
            body["messages"] = with_nine_char_ids(body["messages"])
            self.nine_char_call_ids = True
            return "the server takes only call ids of 9 letters or digits; sending them so"
        if not self.reasoning_back and refuses_missing_reasoning(said):
            self.reasoning_back = True
            self._rebuild_messages(body, history, model)
            return "the model wants its reasoning back with its tool calls; sending it"
        if not self.empty_replies_refused and refuses_empty_reply(said):
            self.empty_replies_refused = True
            self._rebuild_messages(body, history, model)
            return "the server takes no empty replies in the history; leaving them out"
        if (
            "tools" not in body
            and not self.tool_history_refused
            and tool_refusal(said)
            and has_tool_history(history)
        ):
            self.tool_history_refused = True
            self._rebuild_messages(body, history, model)
            return "the server takes no tool calls in a request without tools; telling them"
        return ""

    def _rebuild_messages(
        self, body: dict[str, Any], history: tuple[Message, ...], model: str
    ) -> None:
        """`body`'s messages made again from `history`, as this server now takes them (the
        messages depend on the model and the dialect, not on the other options)."""
        wire = self.history(history, with_tools="tools" in body)
        body["messages"] = build_request(wire, (), None, self.options(model))["messages"]
        self.as_learned(body)


def _without_tools(body: dict[str, Any]) -> None:
    body.pop("tools", None)
    body.pop("tool_choice", None)
