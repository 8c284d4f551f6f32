"""Tool calls and results of a history told in words, for a request that offers no tools.

Pure; no SDK, no I/O. Roles that offer no tools (the crew's reviewer, the planner's
planning call after a turn that used tools, the thought role after the executor) still
send the conversation, calls and results included. Anthropic's Messages API (and
Bedrock's Converse API, and OpenAI-compatible gateways in front of either) refuse such a
request: "Requests which include `tool_use` or `tool_result` blocks must define tools",
"The toolConfig field must be defined when using toolUse and toolResult content blocks".
`tool_history_as_text` gives the history those servers take: each assistant tool call
becomes a line of the assistant's text naming the tool and its arguments, and each tool
result a user message saying which call it answers and what it returned (its images
kept), so the model still reads what was done. Deterministic; the input messages are
left as they were (new messages are made).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from schema import Message, MessageStatus, Role, ToolCall

__all__ = [
    "EMPTY_RESULT",
    "call_text",
    "has_tool_history",
    "result_text",
    "tool_history_as_text",
    "tool_refusal",
]

EMPTY_RESULT: Final = "(no output)"
"""What a result without text (and without images) is told as."""

_MARKERS: Final = (
    "must define tools",  # Anthropic's Messages API
    "toolconfig field must be defined",  # Bedrock's Converse API, relayed by gateways
    "doesn't support tool calling without `tools=`",  # LiteLLM in front of Anthropic
)
"""Words of a server that refuses tool calls and results in a request without tools."""


def tool_refusal(detail: str) -> bool:
    """Whether a server's error words say it takes no tool calls or results in a request
    that offers no tools (`_MARKERS`)."""
    lowered = detail.lower()
    return any(marker.lower() in lowered for marker in _MARKERS)


def has_tool_history(messages: Iterable[Message]) -> bool:
    """Whether any message (sent to a model) is a tool call or a tool result."""
    return any((m.role is Role.TOOL or bool(m.tool_calls)) and not m.display_only for m in messages)


def call_text(call: ToolCall) -> str:
    """One tool call as the line the assistant's text carries in its place."""
    arguments = call.arguments if call.arguments.strip() else "{}"
    return f"[called the tool {call.name or '(unnamed)'} (call {call.id}) with {arguments}]"


def result_text(message: Message, names: Mapping[str, str]) -> str:
    """A tool message as the words of the user message in its place; `names` maps call
    ids to the names of the tools called (for a result that does not carry its own)."""
    call_id = message.tool_call_id or ""
    name = message.name or names.get(call_id) or "(unnamed)"
    failed = bool(message.metadata.get("is_error")) or message.status is MessageStatus.ERROR
    outcome = "failed" if failed else "returned"
    output = message.content if message.content.strip() else ""
    if not output and not message.images:
        output = EMPTY_RESULT
    elif not output:
        output = "(the images below)"
    return f"[the tool {name} (call {call_id}) {outcome}:]\n{output}"


def _told(message: Message, names: Mapping[str, str]) -> Message:
    if message.role is Role.TOOL:
        return message.model_copy(
            update={
                "role": Role.USER,
                "content": result_text(message, names),
                "tool_call_id": None,
                "status": MessageStatus.COMPLETE,
            }
        )
    lines = [message.content] if message.content.strip() else []
    lines += [call_text(call) for call in message.tool_calls]
    metadata = {k: v for k, v in message.metadata.items() if k != "provider_data"}
    # The vendor's data (signed thinking, thought signatures) belongs with the calls as
    # they were issued: not sent with the calls told in words.
    return message.model_copy(
        update={"content": "\n\n".join(lines), "tool_calls": (), "metadata": metadata}
    )


def tool_history_as_text(messages: Sequence[Message]) -> tuple[Message, ...]:
    """`messages` with every tool call and tool result told in words (module docstring);
    the other messages as they are (the same objects)."""
    names = {call.id: call.name for m in messages for call in m.tool_calls}
    return tuple(
        _told(m, names) if (m.role is Role.TOOL or m.tool_calls) and not m.display_only else m
        for m in messages
    )
