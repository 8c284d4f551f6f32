"""The export document: its format and version, the limits an import holds it to, and
reading one back as far as its envelope.

    {"format": "gui-agent-session", "version": 1, "exported_at": "...",
     "session": {SessionRecord}, "messages": [Message, ...], "events": [Event, ...]}

`parse_export` checks what holds for the document as a whole: its size, that it is JSON, its
format and version, its top-level fields and how deeply it nests; text that cannot be
encoded as UTF-8 is repaired to U+FFFD there, and the title made plain as every title is
(`schema.requests.plain_title`). What it holds is checked by
`gui_agent.import_checks`. The whole story is told in `gui_agent.export`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field

from gui_agent.exceptions import InvalidRequest
from schema import PROTOCOL_VERSION, Event, Message, SessionRecord, valid_text
from schema.requests import plain_title

__all__ = [
    "FORMAT",
    "MAX_IMPORT_BYTES",
    "MAX_IMPORT_DEPTH",
    "MAX_IMPORT_EVENTS",
    "MAX_IMPORT_MESSAGES",
    "VERSION",
    "ExportDocument",
    "NotJson",
    "Reading",
    "check_depth",
    "export_session",
    "parse_export",
    "size_text",
    "sizes",
    "too_large_to_import",
]

FORMAT = "gui-agent-session"
VERSION = 1
MAX_IMPORT_BYTES = 64 * 2**20
"""The largest export document an import reads (the page's upload limit is the same number).
It holds the largest message the app keeps, `MAX_IMAGES` images of `MAX_IMAGE_BYTES` (base64
makes them 53.3 MiB) and its text, with room for a long history. Importing a document of
this size peaks at about 2.5 times its size in memory on top of the document itself
(measured: 176 MB for a 70 MB document, parsed, validated and saved to SQLite)."""
MAX_IMPORT_MESSAGES = 50_000
MAX_IMPORT_EVENTS = 500_000
MAX_IMPORT_DEPTH = 100
"""How deeply objects and lists may nest in an import, the document itself counted."""
_TOP_LEVEL_KEYS = frozenset(
    {"format", "version", "exported_at", "protocol_version", "session", "messages", "events"}
)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
"""A JSON escape of a UTF-16 surrogate: only where one is can parsed text hold a lone one."""
_SURROGATE_ESCAPE_BYTES = re.compile(_SURROGATE_ESCAPE.pattern.encode("ascii"))


class NotJson(InvalidRequest):
    """An import (or a replay) that is no JSON object at all: empty, broken, or another
    kind of value. (The API answers it as it answers any body that is not JSON:
    `invalid_json`.)"""


Reading = Literal["import", "replay"]
"""What an export is read for; its refusals name the file so (`READ_AS`)."""

READ_AS: Final[Mapping[Reading, str]] = MappingProxyType(
    {"import": "the import", "replay": "the replay file"}
)
"""How a refusal names the file read for each `Reading`."""


class ExportDocument(BaseModel):
    """The shape of an export document, for its description (e.g. the import endpoint's
    OpenAPI body). Imports are read by `read_import`, which checks more than this says."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: Literal["gui-agent-session"]
    version: Literal[1]
    exported_at: datetime | None = None
    protocol_version: str | None = None
    session: SessionRecord
    messages: list[Message] = Field(default_factory=list, max_length=MAX_IMPORT_MESSAGES)
    events: list[Event] = Field(default_factory=list, max_length=MAX_IMPORT_EVENTS)


def export_session(
    record: SessionRecord, messages: Sequence[Message], events: Sequence[Event] = ()
) -> dict[str, Any]:
    """The session as a JSON-ready document (`json.dumps` it to write a file)."""
    return {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": datetime.now(UTC).isoformat(),
        "protocol_version": PROTOCOL_VERSION,
        "session": record.model_dump(mode="json"),
        "messages": [message.model_dump(mode="json") for message in messages],
        "events": [event.model_dump(mode="json") for event in events],
    }


def too_large_to_import(size: int | None, max_bytes: int = MAX_IMPORT_BYTES) -> str:
    """Why an import of `size` bytes (None: more than `max_bytes`, how much more unknown) is
    refused, in the words the page and the API both use."""
    if size is None:
        return f"the file is larger than the limit of {size_text(max_bytes)}"
    shown, limit = sizes(size, max_bytes)
    return f"the file is {shown}; the limit is {limit}"


def size_text(size: int) -> str:
    """A size in bytes for people: "64 MiB", "70.2 MiB", or "880 bytes" below 1 MiB."""
    if size < 2**20:
        return f"{size} bytes"
    if size % 2**20 == 0:
        return f"{size // 2**20} MiB"
    return f"{size / 2**20:.1f} MiB"


def sizes(size: int, limit: int) -> tuple[str, str]:
    """`size` and `limit` for people, exact when rounding would make them read the same."""
    if size >= 2**20 and round(size / 2**20, 1) == round(limit / 2**20, 1):
        return f"{size:,} bytes", f"{limit:,} bytes"
    return size_text(size), size_text(limit)


def parse_export(
    data: bytes | str, *, max_bytes: int = MAX_IMPORT_BYTES, reading: Reading = "import"
) -> dict[str, Any]:
    """Check the size, the JSON and the format/version header of an export; returns the
    document (its contents are validated by `import_document`, `read_replay` and
    `replay_events`). A refusal of the file as a whole names it as `reading` says
    ("the replay file is not valid JSON: ...")."""
    named = READ_AS[reading]
    size = len(data.encode("utf-8", "surrogatepass")) if isinstance(data, str) else len(data)
    if size > max_bytes:
        raise InvalidRequest(too_large_to_import(size, max_bytes))
    if isinstance(data, str):
        data = valid_text(data)  # escapes of lone surrogates are repaired once parsed
    if not data.strip():
        raise NotJson(f"{named} is not valid JSON: it is empty")
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError
        raise NotJson(f"{named} is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise NotJson(f"{named} is not a JSON object")
    if doc.get("format") != FORMAT:
        raise InvalidRequest(f"not a GuiAgent session export (format must be {FORMAT!r})")
    version = doc.get("version")
    if type(version) is not int or version != VERSION:
        raise InvalidRequest(f"unsupported export version {version!r}; this program reads 1")
    unknown = sorted(set(doc) - _TOP_LEVEL_KEYS)
    if unknown:
        raise InvalidRequest(f"unknown fields in the export: {', '.join(unknown)}")
    check_depth(doc, named=named)
    if isinstance(data, str):
        escaped = _SURROGATE_ESCAPE.search(data) is not None
    else:
        escaped = _SURROGATE_ESCAPE_BYTES.search(data) is not None
    read: dict[str, Any] = _valid_texts(doc) if escaped else doc
    session = read.get("session")
    if isinstance(session, dict) and isinstance(session.get("title"), str):
        session["title"] = plain_title(session["title"])  # as every title is kept
    return read


def check_depth(doc: dict[str, Any], *, named: str = READ_AS["import"]) -> None:
    """InvalidRequest when objects and lists nest beyond `MAX_IMPORT_DEPTH` levels; it
    names the file as `named` does."""
    level: list[dict[str, Any] | list[Any]] = [doc]
    for _ in range(MAX_IMPORT_DEPTH):
        below: list[dict[str, Any] | list[Any]] = []
        for container in level:
            items = container.values() if isinstance(container, dict) else container
            below.extend(item for item in items if isinstance(item, dict | list))
        if not below:
            return
        level = below
    raise InvalidRequest(f"{named} nests objects or lists more than {MAX_IMPORT_DEPTH} levels deep")


def _valid_texts(value: Any) -> Any:
    """Parsed JSON with every lone surrogate in its text, keys included, made U+FFFD."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, list):
        return [_valid_texts(item) for item in value]
    if isinstance(value, dict):
        return {valid_text(key): _valid_texts(item) for key, item in value.items()}
    return value
