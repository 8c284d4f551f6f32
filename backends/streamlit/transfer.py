"""Export and import in the Streamlit front end, through the API.

Export is two steps: "Export chat" asks the server for the document as the chat stands, and
"Save the file" hands it to the browser. The tab keeps that one document (the latest asked
for, of the open chat) and no other, so an export costs its size once, not once per chat. A
chat too large to be imported back is exported all the same, with a warning saying why.

Import takes an export file in the sidebar, makes it a new chat of this person (the server
checks it as untrusted input), opens it, and says what the import did (the answer's
`summary`, in the words the chat page uses).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

import streamlit as st

from backends.api.client import ApiError, GuiAgentClient
from backends.api.responses import SessionDetail
from backends.streamlit.view import plain_markdown
from gui_agent.export import export_file_name

__all__ = ["Export", "export_file_box", "export_panel", "fetch_export", "import_box"]

_NOT_IMPORTABLE = {"too_large", "not_importable"}  # the export answer's codes for it
_API_HINT = "; add ?allow_unimportable=true"  # how the API's message goes on; not for people


@dataclass(frozen=True, slots=True)
class Export:
    """One chat's export, fetched and waiting to be saved."""

    session_id: str
    file_name: str
    data: bytes
    at: datetime
    problem: str | None = None
    """Why it could not be imported back, when it could not."""


def fetch_export(client: GuiAgentClient, session_id: str, title: str) -> Export:
    """The chat's export document; one that could not be imported back is fetched anyway,
    its problem said."""
    at = datetime.now(UTC)
    name = export_file_name(title, at)
    try:
        return Export(session_id, name, client.export_session(session_id), at)
    except ApiError as error:
        if error.code not in _NOT_IMPORTABLE:
            raise
        problem = error.message.split(_API_HINT, 1)[0]
    data = client.export_session(session_id, allow_unimportable=True)
    return Export(session_id, name, data, at, problem)


def export_panel(client: GuiAgentClient, detail: SessionDetail) -> None:
    state = st.session_state
    record = detail.session
    held: Export | None = state.get("export")
    if held is not None and held.session_id != record.id:  # another chat's: let it go
        held = state.export = None
    if st.button("Export chat", key=f"export-{record.id}", disabled=not detail.messages):
        try:
            held = state.export = fetch_export(client, record.id, record.title)
        except ApiError as error:
            st.error(plain_markdown(f"Export: {error.message}"))
            return
    if held is None:
        return
    if held.problem is not None:
        st.warning(
            plain_markdown(
                f"Exported, but this file cannot be imported back: {held.problem}. "
                "It holds the whole chat: keep it as a record."
            )
        )
    st.download_button(
        f"Save the file (the chat as of {held.at.astimezone():%H:%M:%S})",
        data=held.data,
        file_name=held.file_name,
        mime="application/json",
        on_click="ignore",
        key=f"save-{record.id}",
    )


def export_file_box(label: str, name: str, verb: str, take: Callable[[bytes], None]) -> None:
    """A sidebar box for an export file, handed to `take` (an `ApiError` it raises is said
    as "Could not `verb`: ..."). Either way the file is taken once (the box is emptied), so
    a refused file is not sent again on every click after."""
    state = st.session_state
    round_ = state.get(f"{name}_round", 0)  # a new key empties the box
    upload = st.file_uploader(label, type=["json"], key=f"{name}-{round_}")
    if refused := state.pop(f"{name}_refused", None):
        st.error(plain_markdown(f"Could not {verb}: {refused}"))
    if upload is None:
        return
    state[f"{name}_round"] = round_ + 1
    try:
        take(upload.getvalue())
    except ApiError as error:
        state[f"{name}_refused"] = error.message
    st.rerun()


def import_box(client: GuiAgentClient) -> None:
    """The sidebar's import: an export file becomes a new chat, opened, and the page says
    what the import did."""

    def imported(data: bytes) -> None:
        answer = client.import_session(data)
        state = st.session_state
        state.session_id = answer.session.id
        state.pop("replaying", None)  # (the imported chat shows, not a replay)
        state.notice = answer.summary

    export_file_box("Import a chat (an export file)", "import", "import", imported)
