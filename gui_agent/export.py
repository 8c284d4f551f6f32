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
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
import re
import types
import typing
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from gui_agent.exceptions import InvalidRequest
from gui_agent.session import unanswered_call_result
from schema import (
    EVENT_ADAPTER,
    PROTOCOL_VERSION,
    Event,
    ImagePart,
    InterpreterState,
    Message,
    MessageCompleted,
    MessageStarted,
    Role,
    SessionRecord,
    SessionUpdated,
    TextDelta,
    ToolCall,
    ToolCallFinished,
    new_id,
    valid_text,
)
from schema.requests import (
    IMAGE_MEDIA_TYPES,
    MAX_IMAGE_BYTES,
    MAX_IMAGES,
    MAX_MESSAGE_CHARS,
    MAX_TITLE_CHARS,
    image_bytes_problem,
)

logger = logging.getLogger(__name__)

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
_PATH_KEYS = frozenset({"path", "file", "file_path", "filepath", "local_path"})
_FILE_URL = re.compile(r"\s*file:\S", re.IGNORECASE)
"""A `file:` URL (`file:///etc/passwd`), not prose that begins with "File: notes.txt"."""
_M = TypeVar("_M", bound=BaseModel)


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


@dataclass(frozen=True, slots=True)
class HistoryRepairs:
    """What `sendable_history` changed: tool messages dropped as orphans, calls answered
    because they had no result, SYSTEM messages turned into display-only notes."""

    orphan_results_dropped: int = 0
    unanswered_calls_answered: int = 0
    system_messages_made_notes: int = 0

    def as_dict(self) -> dict[str, int]:
        return {
            "orphan_results_dropped": self.orphan_results_dropped,
            "unanswered_calls_answered": self.unanswered_calls_answered,
            "system_messages_made_notes": self.system_messages_made_notes,
        }


@dataclass(frozen=True, slots=True)
class Imported:
    """A checked import: the new session, its messages, what of the file was dropped
    because an import never carries it (`"settings.permissions"`, `"autochat.enabled"`),
    and what was changed to make the history sendable (`repairs`)."""

    record: SessionRecord
    messages: list[Message]
    reset: tuple[str, ...] = ()
    repairs: HistoryRepairs = HistoryRepairs()


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
        size, limit = _sizes(len(data), max_bytes)
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


def too_large_to_import(size: int | None, max_bytes: int = MAX_IMPORT_BYTES) -> str:
    """Why an import of `size` bytes (None: more than `max_bytes`, how much more unknown) is
    refused, in the words the page and the API both use."""
    if size is None:
        return f"the file is larger than the limit of {size_text(max_bytes)}"
    shown, limit = _sizes(size, max_bytes)
    return f"the file is {shown}; the limit is {limit}"


def size_text(size: int) -> str:
    """A size in bytes for people: "64 MiB", "70.2 MiB", or "880 bytes" below 1 MiB."""
    if size < 2**20:
        return f"{size} bytes"
    if size % 2**20 == 0:
        return f"{size // 2**20} MiB"
    return f"{size / 2**20:.1f} MiB"


def _sizes(size: int, limit: int) -> tuple[str, str]:
    """`size` and `limit` for people, exact when rounding would make them read the same."""
    if size >= 2**20 and round(size / 2**20, 1) == round(limit / 2**20, 1):
        return f"{size:,} bytes", f"{limit:,} bytes"
    return size_text(size), size_text(limit)


def _encode(document: dict[str, Any], indent: int | None) -> bytes:
    return json.dumps(document, ensure_ascii=False, indent=indent).encode("utf-8")


def _content_problem(record: SessionRecord, messages: Sequence[Message]) -> str | None:
    """What of `record` and `messages` the import checks would refuse, or None."""
    try:
        _check_record(record)
        seen: set[str] = set()
        for index, message in enumerate(messages):
            if message.id in seen:
                raise InvalidRequest(f"message {index}: duplicate id {message.id!r}")
            seen.add(message.id)
            _check_message(message, f"message {index}")
    except InvalidRequest as exc:
        return str(exc)
    return None


def _depth_problem(document: dict[str, Any]) -> str | None:
    """Why an import would refuse `document` for its nesting (a tool result holding a deep
    tree), or None."""
    try:
        _check_depth(document)
    except InvalidRequest as exc:
        return str(exc)
    return None


def parse_export(data: bytes | str, *, max_bytes: int = MAX_IMPORT_BYTES) -> dict[str, Any]:
    """Check the size, the JSON and the format/version header of an export; returns the
    document (its contents are validated by `import_document` and `replay_events`)."""
    size = len(data.encode("utf-8", "surrogatepass")) if isinstance(data, str) else len(data)
    if size > max_bytes:
        raise InvalidRequest(too_large_to_import(size, max_bytes))
    if isinstance(data, str):
        data = valid_text(data)  # escapes of lone surrogates are repaired once parsed
    try:
        doc = json.loads(data)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and UnicodeDecodeError
        raise InvalidRequest(f"the import is not valid JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise InvalidRequest("the import is not a JSON object")
    if doc.get("format") != FORMAT:
        raise InvalidRequest(f"not a GuiAgent session export (format must be {FORMAT!r})")
    version = doc.get("version")
    if type(version) is not int or version != VERSION:
        raise InvalidRequest(f"unsupported export version {version!r}; this program reads 1")
    unknown = sorted(set(doc) - _TOP_LEVEL_KEYS)
    if unknown:
        raise InvalidRequest(f"unknown fields in the export: {', '.join(unknown)}")
    _check_depth(doc)
    if isinstance(data, str):
        escaped = _SURROGATE_ESCAPE.search(data) is not None
    else:
        escaped = _SURROGATE_ESCAPE_BYTES.search(data) is not None
    if escaped:
        repaired: dict[str, Any] = _valid_texts(doc)
        return repaired
    return doc


def _check_depth(doc: dict[str, Any]) -> None:
    """InvalidRequest when objects and lists nest beyond `MAX_IMPORT_DEPTH` levels."""
    level: list[dict[str, Any] | list[Any]] = [doc]
    for _ in range(MAX_IMPORT_DEPTH):
        below: list[dict[str, Any] | list[Any]] = []
        for container in level:
            items = container.values() if isinstance(container, dict) else container
            below.extend(item for item in items if isinstance(item, dict | list))
        if not below:
            return
        level = below
    raise InvalidRequest(
        f"the import nests objects or lists more than {MAX_IMPORT_DEPTH} levels deep"
    )


def _valid_texts(value: Any) -> Any:
    """Parsed JSON with every lone surrogate in its text, keys included, made U+FFFD."""
    if isinstance(value, str):
        return valid_text(value)
    if isinstance(value, list):
        return [_valid_texts(item) for item in value]
    if isinstance(value, dict):
        return {valid_text(key): _valid_texts(item) for key, item in value.items()}
    return value


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
            imported.record.owner,
            ", ".join(f"{k}={v}" for k, v in imported.repairs.as_dict().items() if v),
        )
    if imported.reset:
        logger.info(
            "import as session %s for %s: reset %s (an import never carries tool "
            "permissions or a running AutoChat)",
            imported.record.id,
            imported.record.owner,
            ", ".join(imported.reset),
        )
    return imported


def _read(doc: Mapping[str, Any], *, owner: str) -> Imported:
    if not owner:
        raise InvalidRequest("an import needs an owner")
    record, raw = _read_contents(doc)
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


def _read_contents(doc: Mapping[str, Any]) -> tuple[SessionRecord, list[Message]]:
    """The document's session and messages as they are, each validated and checked."""
    session = doc.get("session")
    if not isinstance(session, dict):
        raise InvalidRequest("the export has no session object")
    record = _validate(SessionRecord, session, "session")
    _check_record(record)
    raw_messages = doc.get("messages", [])
    if not isinstance(raw_messages, list):
        raise InvalidRequest("'messages' must be a list")
    if len(raw_messages) > MAX_IMPORT_MESSAGES:
        raise InvalidRequest(
            f"the export has {len(raw_messages)} messages; the limit is {MAX_IMPORT_MESSAGES}"
        )
    messages = [_validate(Message, item, f"message {i}") for i, item in enumerate(raw_messages)]
    seen: set[str] = set()
    for index, message in enumerate(messages):
        if message.id in seen:
            raise InvalidRequest(f"message {index}: duplicate id {message.id!r}")
        seen.add(message.id)
        _check_message(message, f"message {index}")
    _read_events(doc)  # never imported, but refused when malformed, like the rest
    return record, messages


def sendable_history(messages: Sequence[Message]) -> tuple[list[Message], HistoryRepairs]:
    """`messages` made safe to send to a model API, and what that changed (see the module
    docstring): SYSTEM messages made display-only notes, orphan tool messages dropped, calls
    without a result answered right after the results they have. Display-only messages are
    never sent, so they neither answer a call nor end a run of answers."""
    notes = sum(1 for m in messages if m.role is Role.SYSTEM and not m.display_only)
    out: list[Message] = []
    dropped = answered = 0
    caller: Message | None = None  # the newest sent message, when it calls tools
    open_calls: dict[str, ToolCall] = {}  # its calls still without a result
    for message in map(_as_note, messages):
        if message.display_only:
            out.append(message)
        elif message.role is Role.TOOL:
            if open_calls.pop(message.tool_call_id or "", None) is None:
                dropped += 1
            else:
                out.append(message)
        else:
            out.extend(_answer_missing(caller, open_calls.values()))
            answered += len(open_calls)
            caller, open_calls = message, {call.id: call for call in message.tool_calls}
            out.append(message)
    out.extend(_answer_missing(caller, open_calls.values()))
    answered += len(open_calls)
    return out, HistoryRepairs(dropped, answered, notes)


def _as_note(message: Message) -> Message:
    """A SYSTEM message as a display-only note; any other message as it is."""
    if message.role is not Role.SYSTEM or message.display_only:
        return message
    return message.model_copy(
        update={"metadata": {**message.metadata, "display_only": True, "imported_system": True}}
    )


def _answer_missing(caller: Message | None, calls: Iterable[ToolCall]) -> list[Message]:
    """Error TOOL messages for `calls` of `caller` that have no result, worded and marked as
    the interpreter marks the calls of a turn that ended (interrupted, `is_error`)."""
    if caller is None:
        return []
    return [
        unanswered_call_result(
            call,
            "No result: the imported session held none for this call. It may have run, "
            "in part or in full; check before running it again.",
            agent=caller.agent,
            was_running=True,
            created_at=caller.created_at,
        )
        for call in calls
    ]


def replay_events(doc: Mapping[str, Any], *, session_id: str | None = None) -> list[Event]:
    """The events of an export in order, for a step-by-step replay.

    Without recorded events, each message is replayed as message_started, its text (and
    reasoning) as text_delta, then message_completed: the messages as the file holds them,
    without the repairs an import makes. `session_id` re-stamps every event, e.g. with the
    id of the imported session.
    """
    events = _read_events(doc)
    if events:
        events.sort(key=lambda event: event.seq)
    else:
        events = list(_synthesize(_read_contents(doc)[1]))  # as recorded, not repaired
    if session_id is not None:
        events = [event.model_copy(update={"session_id": session_id}) for event in events]
    return events


def _read_events(doc: Mapping[str, Any]) -> list[Event]:
    raw_events = doc.get("events")
    if raw_events is None:
        return []
    if not isinstance(raw_events, list):
        raise InvalidRequest("'events' must be a list")
    if len(raw_events) > MAX_IMPORT_EVENTS:
        raise InvalidRequest(
            f"the export has {len(raw_events)} events; the limit is {MAX_IMPORT_EVENTS}"
        )
    return [_validate_event(item, index) for index, item in enumerate(raw_events)]


def _synthesize(messages: Sequence[Message]) -> Iterator[Event]:
    seq = 0

    def stamp() -> int:
        nonlocal seq
        seq += 1
        return seq

    for message in messages:
        yield MessageStarted(
            seq=stamp(),
            message_id=message.id,
            role=message.role,
            message_type=message.type,
            agent=message.agent,
            language=message.language,
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


def _validate_event(item: Any, index: int) -> Event:
    where = f"event {index}"
    if not isinstance(item, dict):
        raise InvalidRequest(f"{where}: not an object")
    try:
        event = EVENT_ADAPTER.validate_python(item)
    except ValidationError as exc:
        raise InvalidRequest(f"{where}: {_first_error(exc)}") from None
    _reject_unknown(type(event), item, where)
    if isinstance(event, MessageCompleted):
        _check_message(event.message, where)
    elif isinstance(event, ToolCallFinished):
        _check_images(event.result.images, where, person=False)
        _check_metadata(event.result.metadata, where)
    elif isinstance(event, SessionUpdated):
        _check_metadata(event.fields, where)
    return event


def _validate(model: type[_M], item: Any, where: str) -> _M:
    if not isinstance(item, dict):
        raise InvalidRequest(f"{where}: not an object")
    _reject_unknown(model, item, where)
    try:
        return model.model_validate(item)
    except ValidationError as exc:
        raise InvalidRequest(f"{where}: {_first_error(exc)}") from None


def _first_error(exc: ValidationError) -> str:
    error = exc.errors(include_url=False, include_input=False)[0]
    location = ".".join(str(part) for part in error["loc"])
    return f"{location}: {error['msg']}" if location else str(error["msg"])


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models a field's annotation can hold (directly or in a container)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin is None and not isinstance(annotation, types.UnionType):
        return []
    found: list[type[BaseModel]] = []
    for arg in typing.get_args(annotation):
        found.extend(_models_in(arg))
    return found


def _reject_unknown(model: type[BaseModel], item: Mapping[str, Any], where: str) -> None:
    """Refuse keys the model does not define, at every level of nesting."""
    unknown = sorted(set(item) - set(model.model_fields))
    if unknown:
        raise InvalidRequest(f"{where}: unknown field(s) {', '.join(map(str, unknown))}")
    for name, field in model.model_fields.items():
        value = item.get(name)
        nested = _models_in(field.annotation)
        if len(nested) != 1 or value is None:
            continue
        children = value if isinstance(value, list) else [value]
        for index, child in enumerate(children):
            if isinstance(child, dict):
                suffix = f"[{index}]" if isinstance(value, list) else ""
                _reject_unknown(nested[0], child, f"{where}.{name}{suffix}")


def _check_record(record: SessionRecord) -> None:
    if len(record.title) > MAX_TITLE_CHARS:
        raise InvalidRequest(
            f"session.title has {len(record.title):,} characters; the limit is {MAX_TITLE_CHARS}"
        )
    if record.goal is not None and len(record.goal) > MAX_MESSAGE_CHARS:
        raise InvalidRequest(
            f"session.goal has {len(record.goal):,} characters; the limit is {MAX_MESSAGE_CHARS:,}"
        )
    usage = record.usage
    for name in ("input_tokens", "output_tokens", "requests"):
        if getattr(usage, name) < 0:
            raise InvalidRequest(f"session.usage.{name} is negative")


def _check_message(message: Message, where: str) -> None:
    # A person's message keeps to what they could send. A model's reply or a tool's output
    # may be longer (a tool's cap is its own); the document's size cap bounds those.
    if message.role is Role.USER and len(message.content) > MAX_MESSAGE_CHARS:
        raise InvalidRequest(
            f"{where}: content has {len(message.content):,} characters; "
            f"the limit is {MAX_MESSAGE_CHARS:,}"
        )
    _check_images(message.images, where, person=message.role is Role.USER)
    _check_metadata(message.metadata, where)
    _check_call_ids(message, where)


def _check_call_ids(message: Message, where: str) -> None:
    """Every call has an id, once per message: results find their call by it."""
    ids = [call.id for call in message.tool_calls]
    if not all(ids):
        raise InvalidRequest(f"{where}: a tool call has no id")
    twice = sorted({i for i in ids if ids.count(i) > 1})
    if twice:
        raise InvalidRequest(f"{where}: tool call id {twice[0]!r} appears more than once")


def _check_images(images: Sequence[ImagePart], where: str, *, person: bool) -> None:
    """Images are base64 data or http(s) URLs of an image type; a person's also keep to
    the limits of sending one (`MAX_IMAGES`, `IMAGE_MEDIA_TYPES`, `MAX_IMAGE_BYTES`)."""
    if person and len(images) > MAX_IMAGES:
        raise InvalidRequest(f"{where}: {len(images)} images; a message carries {MAX_IMAGES}")
    for index, image in enumerate(images):
        label = f"{where}: image {index}"
        if not image.media_type.startswith("image/"):
            raise InvalidRequest(f"{label}: media type {image.media_type!r} is not an image")
        if person and image.media_type.lower() not in IMAGE_MEDIA_TYPES:
            kinds = ", ".join(sorted(IMAGE_MEDIA_TYPES))
            raise InvalidRequest(f"{label}: media type {image.media_type!r} is not one of {kinds}")
        if image.url is not None:
            parts = urlsplit(image.url)
            if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
                raise InvalidRequest(f"{label}: only http(s) URLs are allowed, not {image.url!r}")
        if image.data is not None:
            try:
                decoded = base64.b64decode(image.data, validate=True)
            except (binascii.Error, ValueError):
                raise InvalidRequest(
                    f"{label}: data must be base64 (a path or URL is not allowed)"
                ) from None
            if person and len(decoded) > MAX_IMAGE_BYTES:
                raise InvalidRequest(
                    f"{label}: {len(decoded):,} bytes; the limit is {MAX_IMAGE_BYTES:,}"
                )
            if person and (problem := image_bytes_problem(image.media_type, decoded)) is not None:
                raise InvalidRequest(f"{label}: {problem}")


def _check_metadata(value: Any, where: str, key: str = "") -> None:
    """Refuse `file:` URLs anywhere in metadata, and any value under a path-like key. Text
    such as a plan step "File: notes.txt - ..." (the planner keeps steps in metadata) is kept."""
    if isinstance(value, dict):
        for child_key, child in value.items():
            _check_metadata(child, where, str(child_key))
    elif isinstance(value, list):
        for child in value:
            _check_metadata(child, where, key)
    elif isinstance(value, str):
        if key.lower() in _PATH_KEYS:
            raise InvalidRequest(f"{where}: metadata field {key!r} holds a file path")
        if _FILE_URL.match(value):
            raise InvalidRequest(f"{where}: metadata holds a file: URL")
