"""Export a session to a versioned JSON document, import one back, replay it step by step.

The document:

    {"format": "gui-agent-session", "version": 1, "exported_at": "...",
     "session": {SessionRecord}, "messages": [Message, ...], "events": [Event, ...]}

An import is untrusted input. It becomes a NEW session owned by the importer, and every part
is validated through the schema, recorded events included; unknown fields are refused rather
than silently dropped. The limits of the live API hold too: a person's message text up to
`MAX_MESSAGE_CHARS`, a title up to `MAX_TITLE_CHARS`, a person's images as many, as large
and of the types the page and the API accept (base64 data must be an image of its declared
type: the bytes are sniffed, as there), no negative usage counts. Images must be base64
data or http(s) URLs: a path, a `file:` URL or any other scheme is refused, so nothing in an
import can make the server read its own files. Script or HTML in message text is kept as
text: front ends escape what they render, the importer does not. Text that cannot be encoded
as UTF-8 (a lone surrogate from a broken `\\ud83d` escape) is repaired to U+FFFD, as at every
other entry, and a document nested more than `MAX_IMPORT_DEPTH` levels deep is refused: a
value nested that deep could be neither saved nor exported again.

An import never grants anything: its tool permissions are dropped (every tool asks again, as
in a new session) and AutoChat is switched off, so a crafted file cannot make code run
without the importer's approval. `read_import` says which of these the file held.

The imported history is made sendable to any model API (`sendable_history`), and
`read_import` counts what that changed (`HistoryRepairs`):

- SYSTEM messages become display-only notes: shown, never sent. A model reads a SYSTEM
  message in the history as an instruction (the memory sends it where it stands, Anthropic's
  connector folds it into the system prompt), and instructions with that authority are not
  something a file may grant.
- A tool message that answers no call of the assistant message before it (an orphan, or a
  second answer to one call) is dropped: the APIs refuse it, and the memory would leave it
  out anyway.
- A call left without a result (a session exported while it waited for an approval, or cut
  off by a crash) is answered the way the interpreter answers the calls of a turn that
  ended: an error TOOL message, marked interrupted, saying it may have run. Otherwise every
  later turn would be refused for the unanswered call.

A reply whose tool calls share an id, or have none, is refused rather than repaired: which
result answers which call cannot be told (the executor never keeps such a reply).

Every export can be imported back, or says at once why not (`encode_export`): one document
holds up to `MAX_IMPORT_BYTES` and `MAX_IMPORT_MESSAGES`, enough for the largest message the
app keeps, and the page and the API tell the person when a chat has grown past that. Its
recorded events are optional (a replay re-creates them from the messages), so they are left
out rather than make a document too large. An import over the limit is refused in the same
words everywhere (`too_large_to_import`).

The parts live beside this module: the document's format, limits and header check in
`gui_agent.export_format`, the checks of its contents in `gui_agent.import_checks`, the
repairs that make its history sendable in `gui_agent.history_repair`. This module holds
the entry points (export, import, replay); every name above stays importable from here.
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from gui_agent.exceptions import InvalidRequest
from gui_agent.export_format import (
    FORMAT,
    MAX_IMPORT_BYTES,
    MAX_IMPORT_DEPTH,
    MAX_IMPORT_EVENTS,
    MAX_IMPORT_MESSAGES,
    VERSION,
    ExportDocument,
    check_depth,
    export_session,
    parse_export,
    size_text,
    sizes,
    too_large_to_import,
)
from gui_agent.history_repair import HistoryRepairs, sendable_history
from gui_agent.import_checks import check_messages, check_record, read_contents
from gui_agent.log_text import loggable
from schema import (
    Event,
    InterpreterState,
    Message,
    MessageCompleted,
    MessageStarted,
    SessionRecord,
    TextDelta,
    new_id,
)
from schema.messages import CREW_SPEAKER

__all__ = [
    "FORMAT",
    "MAX_IMPORT_BYTES",
    "MAX_IMPORT_DEPTH",
    "MAX_IMPORT_EVENTS",
    "MAX_IMPORT_MESSAGES",
    "VERSION",
    "Encoded",
    "ExportDocument",
    "HistoryRepairs",
    "Imported",
    "Replay",
    "encode_export",
    "export_file_name",
    "export_session",
    "import_document",
    "import_session",
    "parse_export",
    "read_import",
    "read_replay",
    "replay_events",
    "sendable_history",
    "size_text",
    "too_large_to_import",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Imported:
    """A checked import: the new session, its messages, what of the file was dropped
    because an import never carries it (`"settings.permissions"`, `"autochat.enabled"`),
    and what was changed to make the history sendable (`repairs`)."""

    record: SessionRecord
    messages: list[Message]
    reset: tuple[str, ...] = ()
    repairs: HistoryRepairs = field(default_factory=HistoryRepairs)


@dataclass(frozen=True, slots=True)
class Encoded:
    """An export as the bytes of its file, and why an import would refuse it (`problem`,
    None when it would not; `too_large` when the reason is its size or length)."""

    data: bytes
    problem: str | None = None
    too_large: bool = False
    events_left_out: int = 0


def encode_export(
    record: SessionRecord,
    messages: Sequence[Message],
    events: Sequence[Event] = (),
    *,
    max_bytes: int = MAX_IMPORT_BYTES,
    indent: int | None = None,
) -> Encoded:
    """`export_session` as UTF-8 JSON (`indent` as the file will be written), checked against
    what an import of it would refuse: more than `max_bytes` or `MAX_IMPORT_MESSAGES`, or a
    part the import checks refuse. Recorded events that would take it over a limit are left
    out (a replay re-creates the steps from the messages)."""
    kept = events if len(events) <= MAX_IMPORT_EVENTS else ()
    document = export_session(record, messages, kept)
    data = _encode(document, indent)
    if kept and len(data) > max_bytes:
        kept = ()
        document = export_session(record, messages)
        data = _encode(document, indent)
    left_out = len(events) - len(kept)
    if len(data) > max_bytes:
        size, limit = sizes(len(data), max_bytes)
        problem = f"the export is {size}; an import takes at most {limit}"
        return Encoded(data, problem, too_large=True, events_left_out=left_out)
    if len(messages) > MAX_IMPORT_MESSAGES:
        problem = (
            f"the export has {len(messages):,} messages; an import takes at most "
            f"{MAX_IMPORT_MESSAGES:,}"
        )
        return Encoded(data, problem, too_large=True, events_left_out=left_out)
    refused = _content_problem(record, messages) or _depth_problem(document)
    return Encoded(data, refused, events_left_out=left_out)


def export_file_name(title: str, at: datetime) -> str:
    """The name an export of a chat called `title` is saved under, made at `at`: letters,
    marks and digits of any script are kept (a Russian title names the file in Russian), the
    rest become dashes."""
    kept = [
        char if unicodedata.category(char)[0] in "LMN" else "-"
        for char in unicodedata.normalize("NFC", title).lower()
    ]
    slug = re.sub("-+", "-", "".join(kept)).strip("-")[:40].strip("-") or "chat"
    return f"gui-agent-{slug}-{at.astimezone(UTC):%Y%m%d-%H%M%S}.json"


def _encode(document: dict[str, Any], indent: int | None) -> bytes:
    return json.dumps(document, ensure_ascii=False, indent=indent).encode("utf-8")


def _content_problem(record: SessionRecord, messages: Sequence[Message]) -> str | None:
    """What of `record` and `messages` the import checks would refuse, or None."""
    try:
        check_record(record)
        check_messages(messages)
    except InvalidRequest as exc:
        return str(exc)
    return None


def _depth_problem(document: dict[str, Any]) -> str | None:
    """Why an import would refuse `document` for its nesting (a tool result holding a deep
    tree), or None."""
    try:
        check_depth(document)
    except InvalidRequest as exc:
        return str(exc)
    return None


def import_session(
    data: bytes | str, *, owner: str, max_bytes: int = MAX_IMPORT_BYTES
) -> tuple[SessionRecord, list[Message]]:
    """A new session (fresh id, owned by `owner`, no tool permissions, AutoChat off) and
    its messages from an export.

    InvalidRequest, naming the reason, for malformed JSON, a wrong format or version, input
    over `max_bytes`, more than 50,000 messages, a message or title over the API's limits,
    an image given as a path or a non-http(s) URL, a malformed recorded event, or any field
    that does not validate. Message text is kept verbatim, markup and scripts included;
    rendering escapes it.
    """
    imported = read_import(data, owner=owner, max_bytes=max_bytes)
    return imported.record, imported.messages


def read_import(data: bytes | str, *, owner: str, max_bytes: int = MAX_IMPORT_BYTES) -> Imported:
    """`import_session`, also saying what of the file was reset (see `Imported`)."""
    return _log_reset(_read(parse_export(data, max_bytes=max_bytes), owner=owner))


def import_document(doc: Mapping[str, Any], *, owner: str) -> tuple[SessionRecord, list[Message]]:
    """`import_session` for a document already checked by `parse_export`."""
    imported = _log_reset(_read(doc, owner=owner))
    return imported.record, imported.messages


def _log_reset(imported: Imported) -> Imported:
    if imported.repairs != HistoryRepairs():
        logger.info(
            "import as session %s for %s: history made sendable (%s)",
            imported.record.id,
            loggable(imported.record.owner),
            ", ".join(f"{k}={v}" for k, v in imported.repairs.as_dict().items() if v),
        )
    if imported.reset:
        logger.info(
            "import as session %s for %s: reset %s (an import never carries tool "
            "permissions or a running AutoChat)",
            imported.record.id,
            loggable(imported.record.owner),
            ", ".join(imported.reset),
        )
    return imported


def _read(doc: Mapping[str, Any], *, owner: str) -> Imported:
    if not owner:
        raise InvalidRequest("an import needs an owner")
    record, raw, _events = read_contents(doc)
    messages, repairs = sendable_history(raw)
    reset = tuple(
        name
        for name, held in (
            ("settings.permissions", bool(record.settings.permissions)),
            ("autochat.enabled", record.autochat.enabled),
        )
        if held
    )
    now = datetime.now(UTC)
    imported = record.model_copy(
        update={
            "id": new_id(),
            "owner": owner,
            "state": InterpreterState.STOP if messages else InterpreterState.INIT,
            "settings": record.settings.model_copy(update={"permissions": {}}),
            "autochat": record.autochat.model_copy(update={"enabled": False}),
            "created_at": now,
            "updated_at": now,
        }
    )
    return Imported(imported, messages, reset, repairs)


def replay_events(doc: Mapping[str, Any], *, session_id: str | None = None) -> list[Event]:
    """The events of an export in order, for a step-by-step replay: the recorded ones, or
    else, for each message, message_started, its text (and reasoning) as text_delta, then
    message_completed (the messages as the file holds them, without the repairs an import
    makes). Every part of the document is read as an import reads it (InvalidRequest).
    `session_id` re-stamps every event, e.g. with the id of the imported session.
    """
    _record, messages, events = read_contents(doc)
    return _replayed(events, messages, session_id)


@dataclass(frozen=True, slots=True)
class Replay:
    """An export read for a step-by-step replay (nothing of it is saved)."""

    title: str
    """The exported chat's title ("" when it had none)."""
    message_count: int
    events: list[Event]
    """In order (see `replay_events`)."""


def read_replay(data: bytes | str, *, max_bytes: int = MAX_IMPORT_BYTES) -> Replay:
    """An export's bytes read for a replay as an import reads them (`parse_export`, then
    every part validated once): the chat page and the API refuse the files an import
    refuses, in the same words, but for naming the file as a replay's ("the replay file is
    not valid JSON: ..."). Slow for a large file: call it off the event loop."""
    doc = parse_export(data, max_bytes=max_bytes, reading="replay")
    record, messages, events = read_contents(doc)
    return Replay(record.title, len(messages), _replayed(events, messages, None))


def _replayed(
    events: list[Event], messages: Sequence[Message], session_id: str | None
) -> list[Event]:
    """The recorded `events` in order, or else the steps re-created from `messages`."""
    # (messages as recorded, not repaired)
    events = sorted(events, key=_seq) if events else list(_synthesize(messages))
    if session_id is not None:
        events = [event.model_copy(update={"session_id": session_id}) for event in events]
    return events


def _seq(event: Event) -> int:
    return event.seq


def _synthesize(messages: Sequence[Message]) -> Iterator[Event]:
    seq = 0

    def stamp() -> int:
        nonlocal seq
        seq += 1
        return seq

    for message in messages:
        speaker = message.metadata.get(CREW_SPEAKER)  # (a crew member's, as it was said)
        yield MessageStarted(
            seq=stamp(),
            message_id=message.id,
            role=message.role,
            message_type=message.type,
            agent=message.agent,
            language=message.language,
            speaker=speaker if isinstance(speaker, str) and speaker.strip() else None,
            at=message.created_at,
        )
        if message.reasoning:
            yield TextDelta(
                seq=stamp(),
                message_id=message.id,
                delta=message.reasoning,
                channel="reasoning",
                at=message.created_at,
            )
        if message.content:
            yield TextDelta(
                seq=stamp(), message_id=message.id, delta=message.content, at=message.created_at
            )
        yield MessageCompleted(seq=stamp(), message=message, at=message.created_at)
