"""Tool-call names and ids as a vendor accepts them, rewritten the same way on every request.

A history can hold what one vendor wrote and another refuses, and a refused value is sent
again with every later request, so one bad call would end the session:

- an empty tool name (a server that streamed a call without one): OpenAI and Anthropic
  answer HTTP 400 ("function.name: empty string", "tool_use.name: String should have at
  least 1 character");
- a tool name longer than the vendor allows (Anthropic: 200 characters);
- a call id with characters Anthropic refuses (``functions.Bash:0`` from Kimi, ``a|b`` from
  others; the API wants ``^[a-zA-Z0-9_-]+$``), or longer than OpenAI's 40 characters;
- a call id that is not 9 letters or digits, which Mistral's validator refuses (Mistral's
  API, vLLM serving a Mistral model with its own tokenizer): `nine_char_id`.

A value the vendor accepts goes out unchanged. Any other is rewritten deterministically, so a
call and its result keep matching, with a short hash of the original added so that two
different values never become one. Pure functions; the history itself is never changed.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["UNNAMED_TOOL", "nine_char_id", "wire_id", "wire_name"]

UNNAMED_TOOL = "unnamed_tool"
"""What a tool call without a name is called on the wire."""

_SAFE = re.compile(r"[A-Za-z0-9_-]+")
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]+")
_DIGEST_CHARS = 10


def _digest(value: str) -> str:
    raw = value.encode("utf-8", "surrogatepass")
    return hashlib.sha256(raw).hexdigest()[:_DIGEST_CHARS]


def _rewritten(value: str, *, max_chars: int, fallback: str, safe_chars: bool) -> str:
    base = _UNSAFE.sub("_", value).strip("_") if safe_chars else value
    base = base or fallback
    return f"{base[: max_chars - _DIGEST_CHARS - 1]}_{_digest(value)}"


def wire_name(name: str, *, max_chars: int) -> str:
    """A tool name that is neither empty nor longer than `max_chars`."""
    if not name:
        return UNNAMED_TOOL
    if len(name) <= max_chars:
        return name
    return _rewritten(name, max_chars=max_chars, fallback=UNNAMED_TOOL, safe_chars=False)


def wire_id(call_id: str, *, max_chars: int, safe_chars: bool = False) -> str:
    """A call id that is not empty, has at most `max_chars` characters and, with
    `safe_chars`, only letters, digits, ``_`` and ``-``."""
    fits = bool(call_id) and len(call_id) <= max_chars
    if fits and (not safe_chars or _SAFE.fullmatch(call_id)):
        return call_id
    return _rewritten(call_id, max_chars=max_chars, fallback="call", safe_chars=safe_chars)


def nine_char_id(call_id: str) -> str:
    """A call id of exactly 9 letters or digits (what Mistral's validator takes): one that is
    already goes unchanged, any other becomes 9 characters of its hash."""
    if len(call_id) == 9 and call_id.isascii() and call_id.isalnum():
        return call_id
    return _digest(call_id)[:9]
