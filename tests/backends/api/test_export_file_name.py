"""The API's export is a file named after the chat's title, in any script, as the front ends
name it (`export_file_name`): a title that is not all ASCII goes in `filename*` (UTF-8,
RFC 6266), with an ASCII `filename` for clients that read only that one."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from urllib.parse import unquote

from backends.api.routes_sessions import attachment
from tests.backends.api.live import Api

STAMP = r"\d{8}-\d{6}"


def test_an_export_is_named_after_the_chats_title(api: Api) -> None:
    session_id = api.create_session(title="Holiday plans")
    exported = api.get(f"/api/sessions/{session_id}/export")
    assert exported.status_code == 200, exported.text
    disposition = exported.headers["content-disposition"]
    assert re.fullmatch(
        rf'attachment; filename="gui-agent-holiday-plans-{STAMP}\.json"', disposition
    )


def test_a_title_in_another_script_names_the_file_in_it_with_an_ascii_fallback(
    api: Api,
) -> None:
    session_id = api.create_session(title="Фото из отпуска, Ça va")
    exported = api.get(f"/api/sessions/{session_id}/export")
    assert exported.status_code == 200, exported.text
    disposition = exported.headers["content-disposition"]
    assert disposition.isascii()  # (a header is bytes; what is not ASCII is %-encoded)
    match = re.fullmatch(r'attachment; filename="([^"]+)"; filename\*=UTF-8\'\'(\S+)', disposition)
    assert match is not None, disposition
    fallback, encoded = match.groups()
    assert re.fullmatch(rf"gui-agent-ca-va-{STAMP}\.json", fallback)
    assert re.fullmatch(rf"gui-agent-фото-из-отпуска-ça-va-{STAMP}\.json", unquote(encoded))


def test_a_title_with_no_latin_letters_falls_back_to_chat_in_ascii() -> None:
    at = datetime(2026, 11, 22, 9, 30, 5, tzinfo=UTC)
    assert attachment("🏖 / 🏖", at) == 'attachment; filename="gui-agent-chat-20261122-093005.json"'
    assert attachment("日本語", at) == (
        'attachment; filename="gui-agent-chat-20261122-093005.json"; '
        "filename*=UTF-8''gui-agent-%E6%97%A5%E6%9C%AC%E8%AA%9E-20261122-093005.json"
    )
