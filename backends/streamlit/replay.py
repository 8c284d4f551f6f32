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
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import streamlit as st
from streamlit.delta_generator import DeltaGenerator

from backends.api.client import GuiAgentClient
from backends.streamlit.drawing import draw_entry
from backends.streamlit.transfer import export_file_box
from backends.streamlit.view import entries_of, plain_markdown, safe_markdown
from gui_agent.wording import counted
from schema import Event, Message, MessageCompleted, MessageStarted, TextDelta

__all__ = ["STEP_S", "Frame", "Replaying", "frames", "pause_before", "replay_box", "replay_view"]

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


@dataclass(frozen=True, slots=True)
class Frame:
    """What a replay shows after the event at `index`, drawn `pause` seconds after the one
    before: the messages so far, and the replies being written with their text so far."""

    index: int
    pause: float
    messages: tuple[Message, ...]
    writing: tuple[str, ...]


def frames(events: Sequence[Event], shown: int) -> Iterator[Frame]:
    """A frame per event that changes what is shown (a message started, its text, a message
    done; not a state change or usage), from the first event not `shown` yet; when all were,
    the last frame only, at once (a run of the script drawing the ended replay again)."""
    messages: list[Message] = []
    writing: dict[str, str] = {}
    previous: Event | None = None
    last: Frame | None = None
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
            continue
        pause = pause_before(previous, event) if previous is not None else 0.0
        last = Frame(index, pause, tuple(messages), tuple(writing.values()))
        previous = event
        if index >= shown:
            yield last
    if shown >= len(events) and last is not None:
        yield Frame(last.index, 0.0, last.messages, last.writing)


def _play(replaying: Replaying, area: DeltaGenerator) -> None:
    """Draw each frame after its pause, noting how far the replay got as it goes."""
    for frame in frames(replaying.events, replaying.shown):
        if frame.index >= replaying.shown:
            time.sleep(frame.pause)
        _draw(area, frame.messages, frame.writing)
        replaying.shown = frame.index + 1
    replaying.shown = len(replaying.events)


def _draw(area: DeltaGenerator, messages: Sequence[Message], writing: Sequence[str]) -> None:
    with area.container():
        for entry in entries_of(list(messages)):
            draw_entry(entry)
        for text in writing:
            with st.chat_message("assistant"):
                st.markdown(safe_markdown(text or "…"))
