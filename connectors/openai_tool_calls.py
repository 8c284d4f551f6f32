"""Tool calls assembled from the pieces a Chat Completions stream sends them in.

Pure; no SDK, no I/O. `ToolCallPieces` takes each ``tool_calls`` piece of a delta (its
``index``, ``id``, ``function.name``, ``function.arguments`` and ``extra_content``) and
gives the reply's calls in index order (`ToolCallPieces.calls`). Servers differ in how
they send them, and each way is understood: every parallel call under index 0 (Ollama,
some proxies), the id changed between the pieces of one call, no index at all, arguments
as an object instead of JSON text, no id or an id repeated. `connectors.openai_stream`
feeds it; what the calls carried besides the call goes back with them under
`PROVIDER_DATA_KEY` (`openai_mapping.call_extras`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from schema import ToolCall

__all__ = ["PROVIDER_DATA_KEY", "ToolCallPieces"]

PROVIDER_DATA_KEY: Final = "openai"
"""The key of this mapping's part of `ModelResponse.provider_data`: what a reply's tool
calls carried besides their call (``extra_content``: Gemini's thought signatures), by call
id, and the model that wrote them."""


@dataclass(slots=True)
class _PendingCall:
    id: str
    name: str
    arguments: str
    extra: dict[str, Any] | None = None
    """The call's ``extra_content`` (Gemini's thought signature), to send back with it."""


class ToolCallPieces:
    """The tool calls of one streamed reply, as their pieces come.

    `feed` takes one piece; `calls` gives the calls so far, `extras` what they carried
    besides the call. `grow` is told the length of each piece of arguments before it is
    added (the reply's size cap: it may raise); `new_call_id` makes the id of a call that
    came without one of its own.
    """

    def __init__(self, *, new_call_id: Callable[[], str], grow: Callable[[int], None]) -> None:
        self._new_call_id = new_call_id
        self._grow = grow
        self._calls: dict[tuple[int, int], _PendingCall] = {}
        """Calls by (wire index, how many calls that index stood for before)."""
        self._at_index: dict[int, tuple[int, int]] = {}
        """The call each wire index stands for now."""

    def feed(self, part: Mapping[str, Any], position: int) -> None:
        """Take one piece of a call: `part` is one item of a delta's ``tool_calls``,
        `position` its place in that list."""
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

    def calls(self) -> tuple[ToolCall, ...]:
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

    def extras(self) -> dict[str, dict[str, Any]]:
        """What the calls carried besides the call (``extra_content``), by call id: the ids
        `calls` gave them, so ask after it."""
        return {p.id: p.extra for p in self._calls.values() if p.extra}


def _pairs_joined(text: str) -> str:
    """`text` with each surrogate pair in it made one character (lone halves stay)."""
    if text.isascii():
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
