"""Replaying an export step by step in the Streamlit front end.

The sidebar takes an export file; the server reads it as an import would (POST
/api/sessions/replay) and answers its events, which are played in place of a chat: each
message appears as it was written, with the pauses recorded between them (at most
`STEP_S`), then the end of the replay is said. A replay is not a chat: nothing is saved and
nothing can be sent from it. How far it got is kept, so a run of the script that a click
interrupted goes on from there instead of starting again.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from backends.api.client import GuiAgentClient
from backends.streamlit.drawing import draw_entry
from backends.streamlit.transfer import export_file_box
from backends.streamlit.view import entries_of, plain_markdown, safe_markdown
from gui_agent.wording import counted
from schema import Event, Message, MessageCompleted, MessageStarted, TextDelta

__all__ = ["STEP_S", "Replaying", "pause_before", "replay_box", "replay_view"]

STEP_S = 0.25
"""The longest pause between two steps of a replay (longer recorded gaps are cut to it)."""
END = "End of the replay. Open a chat, or start a new one."


@dataclass(slots=True)
class Replaying:
    """An export being replayed in this tab, and how many of its events were shown."""

    title: str
    message_count: int
    events: list[Event]
    shown: int = 0


def pause_before(previous: Event, event: Event) -> float:
    """The recorded gap between two events, at most a step; a fifth of one when none was
    recorded (events of the same moment, or a replay made from the messages)."""
    gap = (event.at - previous.at).total_seconds()
    return min(max(gap, 0.0), STEP_S) or STEP_S / 5


def replay_box(client: GuiAgentClient) -> None:
    """The sidebar's replay: an export file, replayed in place of the open chat."""

    def replayed(data: bytes) -> None:
        answer = client.replay_export(data)
        state = st.session_state
        state.replaying = Replaying(answer.title, answer.message_count, list(answer.events))
        state.session_id = None

    export_file_box(
        "Replay a chat (an export file; nothing is saved)", "replay", "replay", replayed
    )


def replay_view() -> bool:
    """Show the replay this tab holds, if any (True then: nothing else is shown)."""
    replaying: Replaying | None = st.session_state.get("replaying")
    if replaying is None:
        return False
    st.subheader(plain_markdown(f"Replay: {replaying.title or 'Untitled chat'}"))
    st.caption(
        f"{counted(replaying.message_count, 'message')}, shown as the chat went. "
        "A replay is not a chat: nothing here is saved."
    )
    if st.button("Close the replay"):
        del st.session_state.replaying
        st.rerun()
    _play(replaying, st.empty())
    st.caption(END)
    return True


def _play(replaying: Replaying, area: DeltaGenerator) -> None:
    """Apply the events in order, drawing each that changes what is shown (after its pause)
    from the first one not shown yet."""
    messages: list[Message] = []
    writing: dict[str, str] = {}  # the replies being written: their text so far
    events = replaying.events
    resumed_at = replaying.shown
    previous: Event | None = None
    for index, event in enumerate(events):
        if isinstance(event, MessageStarted):
            writing[event.message_id] = ""
        elif isinstance(event, TextDelta) and event.channel == "content":
            if event.message_id in writing:
                writing[event.message_id] += event.delta
        elif isinstance(event, MessageCompleted):
            writing.pop(event.message.id, None)
            messages.append(event.message)
        else:
            continue  # (a state change, usage, ...: nothing a replay shows)
        if index >= resumed_at:  # not shown in an earlier run of the script
            if previous is not None:
                time.sleep(pause_before(previous, event))
            _draw(area, messages, writing)
            replaying.shown = index + 1
        previous = event
    replaying.shown = len(events)
    if resumed_at >= len(events):  # all shown before: drawn once, as it ended
        _draw(area, messages, writing)


def _draw(area: DeltaGenerator, messages: list[Message], writing: dict[str, str]) -> None:
    with area.container():
        for entry in entries_of(messages):
            draw_entry(entry)
        for text in writing.values():
            with st.chat_message("assistant"):
                st.markdown(safe_markdown(text or "…"))
