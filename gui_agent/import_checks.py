"""What an import's contents are checked for: an import is untrusted input.

Every part is validated through the schema, recorded events included, and unknown fields
are refused at every level rather than silently dropped. The limits of the live API hold
too: a person's message text up to `MAX_MESSAGE_CHARS`, a title up to `MAX_TITLE_CHARS`, a
person's images as many, as large and of the types the page and the API accept (base64 data
must be an image of its declared type: the bytes are sniffed, as there), no negative usage
counts. Images must be base64 data or http(s) URLs, and metadata may hold no `file:` URL and
nothing under a path-like key, so nothing in an import can make the server read its own
files. A reply whose tool calls share an id, or have none, is refused. Each check raises
`InvalidRequest` naming where and why.
"""

from __future__ import annotations

import base64
import binascii
import re
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, TypeVar
from urllib.parse import urlsplit

from pydantic import BaseModel, ValidationError

from gui_agent.exceptions import InvalidRequest
from gui_agent.export_format import MAX_IMPORT_EVENTS, MAX_IMPORT_MESSAGES
from schema import (
    EVENT_ADAPTER,
    Event,
    ImagePart,
    Message,
    MessageCompleted,
    Role,
    SessionRecord,
    SessionUpdated,
    ToolCallFinished,
)
from schema.requests import (
    IMAGE_MEDIA_TYPES,
    MAX_IMAGE_BYTES,
    MAX_IMAGES,
    MAX_MESSAGE_CHARS,
    MAX_TITLE_CHARS,
    image_bytes_problem,
)

__all__ = ["Contents", "check_messages", "check_record", "read_contents", "read_events"]

_PATH_KEYS = frozenset({"path", "file", "file_path", "filepath", "local_path"})
_FILE_URL = re.compile(r"\s*file:\S", re.IGNORECASE)
"""A `file:` URL (`file:///etc/passwd`), not prose that begins with "File: notes.txt"."""
_M = TypeVar("_M", bound=BaseModel)


class Contents(NamedTuple):
    """An export's parts as they are, each validated and checked."""

    record: SessionRecord
    messages: list[Message]
    events: list[Event]
    """The recorded events (an import never keeps them; a replay shows them)."""


def read_contents(doc: Mapping[str, Any]) -> Contents:
    """The document's session, messages and recorded events, each validated and checked
    once: a file with any malformed part is refused, whatever is done with it."""
    session = doc.get("session")
    if not isinstance(session, dict):
        raise InvalidRequest("the export has no session object")
    record = _validate(SessionRecord, session, "session")
    check_record(record)
    raw_messages = doc.get("messages", [])
    if not isinstance(raw_messages, list):
        raise InvalidRequest("'messages' must be a list")
    if len(raw_messages) > MAX_IMPORT_MESSAGES:
        raise InvalidRequest(
            f"the export has {len(raw_messages)} messages; the limit is {MAX_IMPORT_MESSAGES}"
        )
    messages = [_validate(Message, item, f"message {i}") for i, item in enumerate(raw_messages)]
    check_messages(messages)
    return Contents(record, messages, read_events(doc))


def read_events(doc: Mapping[str, Any]) -> list[Event]:
    """The document's recorded events, each validated and checked (none when it has none)."""
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


def check_record(record: SessionRecord) -> None:
    """The session's title and goal within the API's limits, and no negative usage."""
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


def check_messages(messages: Sequence[Message]) -> None:
    """Each message checked (`_check_message`), and each id once."""
    seen: set[str] = set()
    for index, message in enumerate(messages):
        if message.id in seen:
            raise InvalidRequest(f"message {index}: duplicate id {message.id!r}")
        seen.add(message.id)
        _check_message(message, f"message {index}")


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
