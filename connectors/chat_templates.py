"""Conversations as the chat templates of local OpenAI-compatible servers accept them.

The OpenAI API accepts system (and developer) messages anywhere in a conversation, and two
user messages in a row. Many chat templates that local OpenAI-compatible servers render
(llama.cpp with ``--jinja``, vLLM, LM Studio, Ollama) do not: Qwen's raise "System message
must be at the beginning", Mistral and Llama 2 style templates want one leading system
prompt and then strict user/assistant alternation ("Conversation roles must alternate
user/assistant/user/assistant"), and the server answers 400 or 500. Both happen in ordinary
sessions: the planner and supervisor roles send their instruction as a SYSTEM message after
the history (`model_step(instruction=...)`); the images tools return go as a user message
after the step's results, so two screenshots in one step, or a message the person sent
while the tools ran, put user messages in a row; and the embedded model gets tool results
as user turns.

Two pure rewrites of a conversation of ``{"role": ..., "content": ...}`` dicts (Chat
Completions messages, or the embedded model's template messages) make it acceptable. The
messages given are not changed, and neither is the history they came from.

- `system_first_only`: the system messages the conversation starts with become one system
  message; a later one becomes part of a user turn, marked with `INSTRUCTION_LABEL`:
  appended to the user message right before it (so roles still alternate), or else sent as
  a user message of its own.
- `user_turns_merged`: each run of consecutive user messages becomes one user message, the
  texts joined with a blank line and images kept where they were among them.

Only the OpenAI service itself gets neither rewrite (`openai_mapping.is_openai_service`;
the `OpenAIProvider.system_anywhere` and `consecutive_user_turns` knobs override that choice
for a server known to accept either). The embedded model always gets both.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = ["INSTRUCTION_LABEL", "system_first_only", "user_turns_merged"]

INSTRUCTION_LABEL: Final = "[System instruction]"
"""Heads a system message folded into a user turn, so the model does not take it for the
person's words."""

Content = str | list[Any]
"""A message's content: a text, or a list of parts (``{"type": "text", ...}``, images)."""


def system_first_only(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`messages` with system messages only at the start, merged into one (see above)."""
    out: list[dict[str, Any]] = []
    leading = True
    for message in messages:
        if message.get("role") != "system":
            leading = False
            out.append(dict(message))
        elif leading and out:
            out[0] = {**out[0], "content": _joined(out[0].get("content"), message.get("content"))}
        elif leading:
            out.append(dict(message))
        else:
            _fold(out, message.get("content"))
    return out


def user_turns_merged(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """`messages` with each run of consecutive user messages made one (see above)."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if out and message.get("role") == "user" and out[-1].get("role") == "user":
            last = out[-1]
            out[-1] = {**last, "content": _joined(last.get("content"), message.get("content"))}
        else:
            out.append(dict(message))
    return out


def _fold(out: list[dict[str, Any]], content: object) -> None:
    text = _text(content)
    if not text:
        return
    note = f"{INSTRUCTION_LABEL}\n{text}"
    last = out[-1]
    if last.get("role") == "user":
        out[-1] = {**last, "content": _joined(last.get("content"), note)}
    else:
        out.append({"role": "user", "content": note})


def _joined(content: object, addition: object) -> Content:
    """`addition` after `content` (each a text or a list of parts): one text when both are
    texts, else one list of parts; texts that meet are joined with a blank line."""
    if not isinstance(content, list) and not isinstance(addition, list):
        first, second = _text(content), _text(addition)
        return f"{first}\n\n{second}" if first and second else first or second
    parts = _parts(content)
    for part in _parts(addition):
        if parts and _is_text(part) and _is_text(parts[-1]):
            parts[-1] = {**parts[-1], "text": f"{parts[-1]['text']}\n\n{part['text']}"}
        else:
            parts.append(part)
    return parts


def _parts(content: object) -> list[Any]:
    """A content as a new list of parts, without empty texts."""
    if isinstance(content, list):
        return [part for part in content if not _is_text(part) or part["text"]]
    text = _text(content)
    return [{"type": "text", "text": text}] if text else []


def _is_text(part: object) -> bool:
    return (
        isinstance(part, Mapping)
        and part.get("type") == "text"
        and isinstance(part.get("text"), str)
    )


def _text(content: object) -> str:
    """The text of a message content: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = (p.get("text") for p in content if isinstance(p, Mapping))
        return "\n\n".join(t for t in texts if isinstance(t, str) and t)
    return ""
