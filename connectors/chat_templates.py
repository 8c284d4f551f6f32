"""System messages for chat templates that take one only at the start.

The OpenAI API accepts system (and developer) messages anywhere in a conversation. Many chat
templates that local OpenAI-compatible servers render (llama.cpp with ``--jinja``, vLLM,
LM Studio, Ollama) do not: Qwen's raise "System message must be at the beginning", Mistral
and Llama 2 style templates want one leading system prompt and then strict user/assistant
alternation, and the server answers 400 or 500. The planner and supervisor roles send their
instruction as a SYSTEM message after the history (`model_step(instruction=...)`), so on
such servers every one of their calls would fail.

`system_first_only` rewrites a conversation of ``{"role": ..., "content": ...}`` dicts (Chat
Completions messages, or the embedded model's template messages) so that it is accepted:

- the system messages the conversation starts with become one system message;
- a later system message becomes part of a user turn, marked with `INSTRUCTION_LABEL`:
  appended to the user message right before it (so roles still alternate), or else sent as
  a user message of its own.

Pure: the messages given are not changed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = ["INSTRUCTION_LABEL", "system_first_only"]

INSTRUCTION_LABEL: Final = "[System instruction]"
"""Heads a system message folded into a user turn, so the model does not take it for the
person's words."""


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


def _joined(content: object, addition: object) -> str | list[Any]:
    """`addition` (a text or text parts) after `content`, a text or a list of parts."""
    text = _text(addition)
    if isinstance(content, list):
        return [*content, {"type": "text", "text": text}] if text else content
    first = _text(content)
    return f"{first}\n\n{text}" if first and text else first or text


def _text(content: object) -> str:
    """The text of a message content: a string, or the text parts of a list of parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = (p.get("text") for p in content if isinstance(p, Mapping))
        return "\n\n".join(t for t in texts if isinstance(t, str) and t)
    return ""
