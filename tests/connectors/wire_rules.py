"""What each vendor refuses in a request's messages (HTTP 400), as checks on a request body;
and what the chat templates of local OpenAI-compatible servers refuse (HTTP 400 or 500).

Written from the vendors' own error messages, so a test can say "this request would be
refused" without a vendor: each function returns the problems it finds (empty: accepted).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_ANTHROPIC_ID = re.compile(r"[A-Za-z0-9_-]+")


def openai_problems(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Chat Completions: every tool message answers a call of the assistant message before
    the run of tool messages it is in; every call is answered; names are not empty; ids have
    at most 40 characters."""
    problems: list[str] = []
    open_calls: set[str] = set()
    in_tool_run = False
    for index, message in enumerate(messages):
        role = message.get("role")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if not in_tool_run or call_id not in open_calls:
                problems.append(f"messages[{index}]: a tool message that follows no call of its")
            open_calls.discard(str(call_id))
            continue
        if open_calls:
            problems.append(f"messages[{index}]: calls without a result: {sorted(open_calls)}")
            open_calls.clear()
        in_tool_run = role == "assistant" and bool(message.get("tool_calls"))
        for call in message.get("tool_calls") or ():
            if not call["function"]["name"]:
                problems.append(f"messages[{index}]: function.name is an empty string")
            if len(call["id"]) > 40:
                problems.append(f"messages[{index}]: a call id longer than 40 characters")
            open_calls.add(call["id"])
    if open_calls:
        problems.append(f"calls without a result: {sorted(open_calls)}")
    return problems


def anthropic_problems(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Messages API: roles alternate; every tool_use is answered by a tool_result in the next
    message, and every tool_result answers one; tool_result blocks come first; ids match
    ``^[a-zA-Z0-9_-]+$``; names have 1 to 200 characters; no message is empty; no text
    block is empty or only white space ("text content blocks must contain non-whitespace
    text"); a failed tool result is not empty ("content cannot be empty if `is_error` is
    true")."""
    problems: list[str] = []
    expected: set[str] = set()
    for index, message in enumerate(messages):
        blocks = message.get("content") or []
        if not blocks:
            problems.append(f"messages.{index}: empty content")
        for block in _with_nested(blocks):
            if block.get("type") == "text" and not str(block.get("text", "")).strip():
                problems.append(f"messages.{index}: a text block without non-whitespace text")
        if index and messages[index - 1]["role"] == message["role"]:
            problems.append(f"messages.{index}: two {message['role']} messages in a row")
        results = [b for b in blocks if b.get("type") == "tool_result"]
        for block in results:
            if block.get("is_error") and not block.get("content"):
                problems.append(
                    f"messages.{index}: tool_result: content cannot be empty if `is_error` is true"
                )
        answered = {str(b["tool_use_id"]) for b in results}
        if answered != expected:
            problems.append(f"messages.{index}: tool results {answered} for calls {expected}")
        if blocks[: len(results)] != results:
            problems.append(f"messages.{index}: tool_result blocks do not come first")
        expected = set()
        for block in blocks:
            if block.get("type") != "tool_use":
                continue
            if not _ANTHROPIC_ID.fullmatch(block["id"]):
                problems.append(f"messages.{index}: tool_use.id {block['id']!r} fails the pattern")
            if not 1 <= len(block["name"]) <= 200:
                problems.append(f"messages.{index}: tool_use.name has {len(block['name'])} chars")
            expected.add(block["id"])
    if expected:
        problems.append(f"calls without a result: {sorted(expected)}")
    return problems


def _with_nested(blocks: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """`blocks` and the blocks inside their tool results."""
    nested = [
        inner
        for block in blocks
        if isinstance(block.get("content"), list)
        for inner in block["content"]
    ]
    return [*blocks, *nested]


def system_first_problems(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Chat templates of local OpenAI-compatible servers (llama.cpp ``--jinja``, vLLM, LM
    Studio, Ollama): a system message only as the first message. Qwen's templates raise
    "System message must be at the beginning."; Mistral and Llama 2 style ones take one
    leading system prompt and then want user and assistant turns to alternate."""
    return [
        f"messages[{index}]: a system message that is not first"
        for index, message in enumerate(messages)
        if index and message.get("role") in ("system", "developer")
    ]


def alternation_problems(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Chat templates that want user and assistant turns to alternate (Mistral, Llama 2,
    Gemma style ones under llama.cpp ``--jinja``, vLLM, LM Studio) raise "Conversation roles
    must alternate user/assistant/user/assistant/..." on two user messages in a row."""
    return [
        f"messages[{index}]: a user message right after another"
        for index, message in enumerate(messages)
        if index and message.get("role") == "user" and messages[index - 1].get("role") == "user"
    ]


ANTHROPIC_TOOLS_UNDEFINED = (
    "Requests which include `tool_use` or `tool_result` blocks must define tools."
)
"""Anthropic's words (HTTP 400, ``invalid_request_error``) for a request whose messages
carry tool calls or results but that defines no tools."""

BEDROCK_TOOLS_UNDEFINED = (
    "The toolConfig field must be defined when using toolUse and toolResult content blocks."
)
"""Bedrock's Converse API's words (a ValidationException, HTTP 400) for the same; gateways
that serve Bedrock's models over OpenAI's API pass them on."""


def anthropic_tools_problem(body: Mapping[str, Any]) -> str | None:
    """`ANTHROPIC_TOOLS_UNDEFINED` when a Messages API request body has tool_use or
    tool_result blocks and no tools; else None."""
    if body.get("tools"):
        return None
    for message in body.get("messages") or ():
        content = message.get("content")
        if isinstance(content, list) and any(
            isinstance(b, Mapping) and b.get("type") in ("tool_use", "tool_result") for b in content
        ):
            return ANTHROPIC_TOOLS_UNDEFINED
    return None


def openai_tools_problem(body: Mapping[str, Any]) -> str | None:
    """`BEDROCK_TOOLS_UNDEFINED` when a Chat Completions request body (to a gateway in front
    of Bedrock) has tool calls or tool messages and no tools; else None."""
    if body.get("tools"):
        return None
    for message in body.get("messages") or ():
        if message.get("role") == "tool" or message.get("tool_calls"):
            return BEDROCK_TOOLS_UNDEFINED
    return None


MISTRAL_EMPTY_ASSISTANT = "Assistant message must have either content or tool_calls, but not none."
"""Mistral's validator's words (HTTP 400) for an assistant message with neither content nor
tool calls; vLLM serving a Mistral model says "Invalid assistant message: ..."."""


def mistral_problems(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """Mistral's validator (its API, and vLLM with ``--tokenizer-mode mistral``): an
    assistant message has content or tool calls (an empty string counts as none)."""
    return [
        f"messages[{index}]: {MISTRAL_EMPTY_ASSISTANT}"
        for index, message in enumerate(messages)
        if message.get("role") == "assistant"
        and not message.get("content")
        and not message.get("tool_calls")
    ]
