"""What the Streamlit replay draws, event by event (replay.py `frames`): a frame for each
event that changes what is shown, none for the others; a replay resumed after a click goes
on from where it was; one that had ended is drawn once more, as it ended."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from backends.streamlit.replay import STEP_S, frames, pause_before
from schema import (
    Event,
    InterpreterState,
    Message,
    MessageCompleted,
    MessageStarted,
    Role,
    StateChanged,
    TextDelta,
)

START = datetime(2026, 1, 1, tzinfo=UTC)


def a_turn() -> list[Event]:
    question = Message(role=Role.USER, content="how are you?")
    answer = Message(role=Role.ASSISTANT, content="Fine, thanks.")
    at = [START + timedelta(seconds=s) for s in (0, 0, 0.1, 5, 5.05, 5.1)]
    return [
        MessageCompleted(message=question, at=at[0]),
        StateChanged(from_state=InterpreterState.STOP, to_state=InterpreterState.RUNNING, at=at[1]),
        MessageStarted(message_id=answer.id, at=at[2]),
        TextDelta(message_id=answer.id, delta="Fine, ", at=at[3]),
        TextDelta(message_id=answer.id, delta="thanks.", at=at[4]),
        MessageCompleted(message=answer, at=at[5]),
    ]


def test_each_event_that_changes_the_view_is_a_frame_after_its_recorded_pause() -> None:
    events = a_turn()
    shown = list(frames(events, 0))
    assert [f.index for f in shown] == [0, 2, 3, 4, 5]  # the state change shows nothing
    assert [f.writing for f in shown] == [(), ("",), ("Fine, ",), ("Fine, thanks.",), ()]
    assert [m.content for m in shown[-1].messages] == ["how are you?", "Fine, thanks."]
    # the recorded gaps, a long one cut to a step, none recorded a fifth of one
    assert [round(f.pause, 3) for f in shown] == [0.0, 0.1, STEP_S, 0.05, 0.05]
    assert pause_before(events[0], events[1]) == STEP_S / 5


def test_a_resumed_replay_goes_on_and_an_ended_one_is_drawn_once_as_it_ended() -> None:
    events = a_turn()
    resumed = list(frames(events, 4))
    assert [f.index for f in resumed] == [4, 5]
    assert resumed[0].writing == ("Fine, thanks.",)  # what was written before is kept
    ended = list(frames(events, len(events)))
    assert len(ended) == 1 and ended[0].pause == 0.0 and ended[0].writing == ()
    assert [m.content for m in ended[0].messages] == ["how are you?", "Fine, thanks."]
    assert list(frames([], 0)) == []
