"""INIT → RUNNING ⇄ WAITING → STOP (→ RUNNING), never back to INIT; illegal moves raise."""

from __future__ import annotations

import pytest

from gui_agent.exceptions import IllegalTransition
from gui_agent.state import StateMachine, Trigger
from schema import InterpreterState as S


def machine() -> tuple[StateMachine, list[tuple[S, S, str]]]:
    seen: list[tuple[S, S, str]] = []
    return StateMachine(lambda a, b, r: seen.append((a, b, r))), seen


def test_legal_path_announces_every_transition_with_its_reason() -> None:
    m, seen = machine()
    m.fire(Trigger.BEGIN, "message")
    m.fire(Trigger.AWAIT_APPROVAL, "approval needed")
    m.fire(Trigger.RESUME, "allow_once")
    m.fire(Trigger.FINISH, "completed")
    m.fire(Trigger.BEGIN, "next")
    assert seen == [
        (S.INIT, S.RUNNING, "message"),
        (S.RUNNING, S.WAITING, "approval needed"),
        (S.WAITING, S.RUNNING, "allow_once"),
        (S.RUNNING, S.STOP, "completed"),
        (S.STOP, S.RUNNING, "next"),
    ]


@pytest.mark.parametrize(
    ("path", "illegal"),
    [
        ([], Trigger.FINISH),
        ([], Trigger.RESUME),
        ([], Trigger.AWAIT_APPROVAL),
        ([Trigger.BEGIN], Trigger.BEGIN),
        ([Trigger.BEGIN], Trigger.RESUME),
        ([Trigger.BEGIN, Trigger.AWAIT_APPROVAL], Trigger.AWAIT_APPROVAL),
        ([Trigger.BEGIN, Trigger.AWAIT_APPROVAL], Trigger.BEGIN),
        ([Trigger.BEGIN, Trigger.FINISH], Trigger.FINISH),
        ([Trigger.BEGIN, Trigger.FINISH], Trigger.AWAIT_APPROVAL),
    ],
)
def test_illegal_transition_raises_and_changes_nothing(
    path: list[Trigger], illegal: Trigger
) -> None:
    m, seen = machine()
    for trigger in path:
        m.fire(trigger)
    before, announced = m.state, len(seen)
    assert not m.can(illegal)
    with pytest.raises(IllegalTransition, match=illegal.value):
        m.fire(illegal)
    assert m.state is before and len(seen) == announced


def test_init_is_never_reentered() -> None:
    m, seen = machine()
    m.fire(Trigger.BEGIN)
    m.fire(Trigger.FINISH)
    for trigger in Trigger:
        if m.can(trigger):
            m.fire(trigger)
    assert S.INIT not in {dest for _, dest, _ in seen}


def test_restored_session_starts_where_it_was_left() -> None:
    m = StateMachine(lambda *_: None, S.STOP)
    assert m.state is S.STOP
    m.fire(Trigger.BEGIN)
    assert m.state is S.RUNNING


def test_the_transitions_machine_holds_the_state_we_report() -> None:
    m, _ = machine()
    for trigger in (Trigger.BEGIN, Trigger.AWAIT_APPROVAL, Trigger.RESUME, Trigger.FINISH):
        m.fire(trigger)
        library = m._machine
        assert library is not None
        model = library.models[0]
        assert library.get_model_state(model).value is m.state
        assert getattr(model, f"is_{m.state.name}")()  # the library's own state check agrees
