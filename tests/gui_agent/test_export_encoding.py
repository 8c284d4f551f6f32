"""What an export says about importing it back (`encode_export`), the words an oversized
import is refused in (`too_large_to_import`), and the name an export is saved under."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from gui_agent.export import (
    MAX_IMPORT_MESSAGES,
    encode_export,
    export_file_name,
    read_import,
    too_large_to_import,
)
from schema import Message, MessageCompleted, Role, SessionRecord

RECORD = SessionRecord(owner="me", title="A long one")
AT = datetime(2026, 11, 22, 9, 30, 5, tzinfo=UTC)


def chat(count: int, text: str = "hello") -> list[Message]:
    return [Message(role=Role.USER, content=f"{text} {i}") for i in range(count)]


def test_an_export_within_the_limit_says_nothing_and_imports_back() -> None:
    messages = chat(3)
    events = [MessageCompleted(seq=i + 1, message=m) for i, m in enumerate(messages)]
    encoded = encode_export(RECORD, messages, events, indent=2)
    assert encoded.problem is None and encoded.events_left_out == 0
    assert len(json.loads(encoded.data)["events"]) == 3
    assert read_import(encoded.data, owner="you").messages == messages


def test_events_are_left_out_before_they_take_an_export_over_the_limit() -> None:
    messages = chat(50, "x" * 1000)
    events = [MessageCompleted(seq=i + 1, message=m) for i, m in enumerate(messages)]
    bare = len(encode_export(RECORD, messages).data)
    encoded = encode_export(RECORD, messages, events, max_bytes=bare + 1000)
    assert encoded.problem is None and encoded.events_left_out == 50
    imported = read_import(encoded.data, owner="you", max_bytes=bare + 1000)
    assert imported.messages == messages


def test_an_export_over_the_limit_names_its_size_and_the_limit() -> None:
    messages = chat(40, "y" * 50_000)
    encoded = encode_export(RECORD, messages, max_bytes=2**20)
    assert encoded.too_large
    assert encoded.problem == (
        f"the export is {len(encoded.data) / 2**20:.1f} MiB; an import takes at most 1 MiB"
    )


def test_an_export_with_more_messages_than_an_import_takes_says_so() -> None:
    encoded = encode_export(RECORD, chat(MAX_IMPORT_MESSAGES + 1, ""))
    assert encoded.too_large
    assert encoded.problem == "the export has 50,001 messages; an import takes at most 50,000"


def test_an_import_too_large_is_refused_with_both_sizes() -> None:
    assert too_large_to_import(70_000_000) == "the file is 66.8 MiB; the limit is 64 MiB"
    assert too_large_to_import(880, 512) == "the file is 880 bytes; the limit is 512 bytes"
    # Sizes that would read the same rounded are given exactly.
    assert too_large_to_import(64 * 2**20 + 5) == (
        "the file is 67,108,869 bytes; the limit is 67,108,864 bytes"
    )
    assert too_large_to_import(None) == "the file is larger than the limit of 64 MiB"


def test_an_export_is_named_after_its_title_in_any_script() -> None:
    assert export_file_name("Фото из отпуска 🏖", AT) == (
        "gui-agent-фото-из-отпуска-20261122-093005.json"
    )
    assert export_file_name("हिन्दी नोट्स", AT).startswith("gui-agent-हिन्दी-नोट्स-")
    assert export_file_name("Ça/va: ok?", AT) == "gui-agent-ça-va-ok-20261122-093005.json"
    assert export_file_name("🏖 / 🏖", AT) == "gui-agent-chat-20261122-093005.json"
