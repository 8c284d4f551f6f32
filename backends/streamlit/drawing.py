"""How the Streamlit front end draws a chat's entries (a message, with the tool calls it made
and their results folded in), for the open chat and for a replay alike."""

from __future__ import annotations

import streamlit as st

from backends.streamlit.view import CallView, Entry, image_source, plain_markdown, safe_markdown
from schema import MessageType

__all__ = ["draw_call", "draw_entry"]


def draw_call(view: CallView) -> None:
    with st.expander(plain_markdown(view.label), expanded=view.result is None):
        st.code(view.arguments, language="json")
        if view.result is not None:
            st.code(view.result, language=None)


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
            source = image_source(image)
            if isinstance(source, bytes):
                st.image(source)
            else:
                st.caption(plain_markdown(source))
        for view in entry.calls:
            draw_call(view)
        for note in entry.notes:
            st.caption(plain_markdown(note))
