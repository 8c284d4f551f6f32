"""AutoChat in the Streamlit front end: the switch and its limits for the open chat, and
where an AutoChat run is (which automatic turn, or why it stopped), kept per chat in the
browser session from the events the app follows."""

from __future__ import annotations

from typing import Any

import streamlit as st

from backends.api.client import ApiError, GuiAgentClient
from backends.api.responses import SessionDetail
from backends.streamlit.forms import to_save
from backends.streamlit.view import plain_markdown
from gui_agent.wording import AUTOCHAT_STILL_ON, autochat_stopped, counted, with_full_stop
from schema import AutoChatSettings, AutoChatStopped, AutoChatTurn, SessionRecord

__all__ = ["autochat_panel", "note_autochat", "read_up_to", "resume_point"]

_STATUS = "autochat-status"
_READ = "events-read"


def resume_point(detail: SessionDetail) -> int | None:
    """Where this tab stopped reading the chat's events: the seq of the last one it read,
    while the server still numbers them the same way (the same epoch); None when it has
    read none of this run of numbers. Reading on from there, AutoChat's word on a run that
    ended between two runs of the script is not lost."""
    read = st.session_state.get(_READ, {}).get(detail.session.id)
    if read is None or read[0] != detail.epoch or read[1] > detail.last_seq:
        return None
    return int(read[1])


def read_up_to(session_id: str, epoch: str, seq: int) -> None:
    """Note that this tab has read the chat's events up to `seq` (of `epoch`)."""
    st.session_state.setdefault(_READ, {})[session_id] = (epoch, seq)


def note_autochat(session_id: str, event: object) -> bool:
    """Keep what an AutoChat event says about the chat, to show next to the switch.
    Whether that changed what is shown there."""
    if isinstance(event, AutoChatTurn):
        words = f"Automatic turn {event.turn} of {event.max_turns}."
    elif isinstance(event, AutoChatStopped):
        words = with_full_stop(autochat_stopped(event.turns, event.reason, event.detail))
    else:
        return False
    shown = st.session_state.setdefault(_STATUS, {})
    if shown.get(session_id) == words:
        return False
    shown[session_id] = words
    return True


def _save(client: GuiAgentClient, session_id: str, changes: dict[str, Any]) -> SessionRecord | None:
    try:
        return client.update_session(session_id, autochat=changes)
    except ApiError as error:
        st.session_state.flash = error.message
        return None


def _switched(client: GuiAgentClient, session_id: str, key: str) -> None:
    _save(client, session_id, {"enabled": bool(st.session_state[key])})


_LIMITS = ("max_turns", "delay_s", "token_budget", "time_budget_s")


def _boxes(session_id: str, settings: AutoChatSettings) -> dict[str, str]:
    """The limit boxes' keys. They carry the values the server has, so a change saved
    anywhere shows in them (drawn afresh)."""
    server = "-".join(str(getattr(settings, name)) for name in _LIMITS)
    return {name: f"autochat-{name}-{session_id}-{server}" for name in _LIMITS}


def _limits_of(settings: AutoChatSettings) -> dict[str, Any]:
    return {name: getattr(settings, name) for name in _LIMITS}


def _limits_held(boxes: dict[str, str]) -> dict[str, Any] | None:
    """The limits as the boxes hold them, as the server takes them (0 budget: none); None
    before the boxes were drawn."""
    state = st.session_state
    if any(key not in state for key in boxes.values()):
        return None
    typed = {name: state[key] for name, key in boxes.items()}
    return {
        "max_turns": int(typed["max_turns"]),
        "delay_s": float(typed["delay_s"]),
        "token_budget": int(typed["token_budget"]) or None,
        "time_budget_s": float(typed["time_budget_s"]) or None,
    }


def _save_limits(
    client: GuiAgentClient, session_id: str, shown: dict[str, Any], boxes: dict[str, str]
) -> None:
    """Save's callback: the limits as the boxes had them when it was clicked."""
    held = _limits_held(boxes)
    if held is not None and to_save(f"limits-{session_id}", shown, held, clicked=True):
        _save(client, session_id, held)


def autochat_panel(client: GuiAgentClient, detail: SessionDetail) -> None:
    """The switch (saved at once) and the limits (saved together), as the server has them."""
    session_id, settings = detail.session.id, detail.session.autochat
    state = st.session_state
    # The limits are saved by Save's callback, first thing in the run its click starts
    # (saved in the script, a change made at once, such as the switch, would start its
    # run in that one's place before they were). Its click itself can be lost that way,
    # when the other change comes as the run starts: the limits the boxes hold are saved
    # then, by the run that took its place (`forms`).
    form = f"limits-{session_id}"
    boxes = _boxes(session_id, settings)
    held = _limits_held(boxes)
    if held is not None and to_save(form, _limits_of(settings), held, clicked=False):
        saved = _save(client, session_id, held)
        if saved is not None:
            settings = saved.autochat
            boxes = _boxes(session_id, settings)
    key = f"autochat-{session_id}"
    state[key] = settings.enabled
    with st.expander("AutoChat", expanded=settings.enabled):
        st.toggle(
            "AutoChat: keep working on its own",
            key=key,
            on_change=_switched,
            args=(client, session_id, key),
        )
        with st.form(form):
            left, right = st.columns(2)
            left.number_input(
                "Max automatic turns",
                min_value=1,
                max_value=1000,
                value=settings.max_turns,
                key=boxes["max_turns"],
            )
            right.number_input(
                "Delay between turns (s)",
                min_value=0.0,
                max_value=3600.0,
                value=settings.delay_s,
                key=boxes["delay_s"],
            )
            left.number_input(
                "Token budget (0 = none)",
                min_value=0,
                value=settings.token_budget or 0,
                key=boxes["token_budget"],
            )
            right.number_input(
                "Time budget in s (0 = none)",
                min_value=0.0,
                value=settings.time_budget_s or 0.0,
                key=boxes["time_budget_s"],
            )
            st.form_submit_button(
                "Save limits",
                on_click=_save_limits,
                args=(client, session_id, _limits_of(settings), boxes),
            )
        status = state.get(_STATUS, {}).get(session_id)
        if status:
            stopped = status.startswith("AutoChat stopped") and settings.enabled
            st.caption(plain_markdown(f"{status} {AUTOCHAT_STILL_ON}" if stopped else status))
        elif settings.enabled:
            st.caption(f"AutoChat is on: up to {counted(settings.max_turns, 'automatic turn')}.")
        else:
            st.caption("AutoChat is off.")
