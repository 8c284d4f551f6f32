"""How the Streamlit front end draws a chat's entries (a message, with the tool calls it made
and their results folded in; a call running now with what it has printed so far), for the
open chat and for a replay alike."""

from __future__ import annotations

import logging

import streamlit as st
from PIL import Image

from backends.streamlit.view import (
    CallView,
    Entry,
    hidden_line,
    image_source,
    plain_markdown,
    safe_markdown,
)
from gui_agent.terminal_text import overwritten
from schema import ImagePart, MessageType

__all__ = ["UNSHOWABLE", "draw_call", "draw_entry"]

logger = logging.getLogger(__name__)

UNSHOWABLE = "(could not show this picture)"
"""Said in place of a picture whose data is damaged (a half-finished download, say)."""


def draw_call(view: CallView) -> None:
    with st.expander(plain_markdown(view.label), expanded=view.result is None):
        st.code(view.arguments, language="json")
        if view.result is not None:
            st.code(view.result, language=None)
        elif view.output or view.hidden:  # running: what it printed so far, growing
            if view.hidden:
                st.caption(hidden_line(view.hidden))
            st.code(overwritten(view.output), language=None)


def draw_entry(entry: Entry) -> None:
    with st.chat_message(entry.role):
        if entry.speaker:
            st.caption(plain_markdown(entry.speaker))
        if entry.reasoning:
            with st.expander("Reasoning"):
                st.text(entry.reasoning)
        if entry.kind is MessageType.CODE:
            st.code(entry.text, language=entry.language)
        elif entry.kind is MessageType.CONSOLE:
            st.code(entry.text, language=None)
        elif entry.kind is MessageType.CONFIRMATION:
            st.caption(plain_markdown(entry.text))
        elif entry.text:
            st.markdown(safe_markdown(entry.text))
        for image in entry.images:
            _draw_picture(image)
        for view in entry.calls:
            draw_call(view)
        for note in entry.notes:
            st.caption(plain_markdown(note))


def _draw_picture(image: ImagePart) -> None:
    """The picture, or a note in its place. The server checks only a picture's first bytes,
    so one cut short is stored as any other; Streamlit decodes it as it is drawn, and the
    error would end the script run: the rest of the chat, its approvals and its message box
    would not be drawn, now or on any run after."""
    source = image_source(image)
    if isinstance(source, bytes):
        try:
            st.image(source)
        except (OSError, ValueError, SyntaxError, Image.DecompressionBombError) as error:
            logger.warning("A picture could not be drawn: %s", error)
            source = UNSHOWABLE
        else:
            return
    st.caption(plain_markdown(source))
