"""What a person does to the open chat in the Streamlit front end, besides writing: Stop,
Retry the last turn, Delete the chat (after a confirmation), and a message with pictures
attached (`prompt_of`)."""

from __future__ import annotations

import base64
from collections.abc import Callable

import streamlit as st
from streamlit.typing import ChatInputValue

from backends.api.client import ApiError, GuiAgentClient
from backends.api.responses import SessionDetail
from schema import ImagePart

__all__ = ["IMAGE_TYPES", "chat_actions", "prompt_of"]

IMAGE_TYPES = ("png", "jpg", "jpeg", "gif", "webp")
"""What the message box takes as attachments (the server checks their number and size)."""


def prompt_of(value: str | ChatInputValue | None) -> tuple[str, list[ImagePart]] | None:
    """The text and pictures of what the message box gave, or None when nothing was sent."""
    if value is None:
        return None
    if isinstance(value, str):
        return (value, []) if value.strip() else None
    images = [
        ImagePart(
            media_type=file.type or "image/png",
            data=base64.b64encode(file.getvalue()).decode("ascii"),
        )
        for file in value.files
    ]
    text = value.text or ""
    return (text, images) if text.strip() or images else None


def _act(action: str, call: Callable[[], object]) -> None:
    """Run an action's request; the server's refusal (409: a turn runs) is said."""
    try:
        call()
    except ApiError as error:
        st.session_state.flash = f"{action}: {error.message}"
    st.rerun()


def chat_actions(client: GuiAgentClient, detail: SessionDetail) -> None:
    """Stop, Retry and Delete, each enabled when it can act."""
    session_id = detail.session.id
    running = detail.busy or bool(detail.pending_approvals)
    stop, retry, delete = st.columns(3)
    if stop.button("Stop", key="stop", disabled=not running, width="stretch"):
        _act("Stop", lambda: client.stop(session_id))
    if retry.button(
        "Retry last turn",
        key="retry",
        disabled=running or not detail.messages,
        width="stretch",
    ):
        _act("Retry", lambda: client.retry(session_id))
    with delete.popover("Delete chat", width="stretch"):
        st.write("Delete this chat and its files, for good?")
        if st.button("Delete", key="delete", type="primary"):
            try:
                client.delete_session(session_id)
            except ApiError as error:
                st.session_state.flash = f"Delete: {error.message}"
            else:
                st.session_state.session_id = None
            st.rerun()
