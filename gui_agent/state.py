"""The interpreter's state machine: INIT → RUNNING ⇄ WAITING → STOP (→ RUNNING), never to INIT.

Built on the `transitions` library's core `Machine`: it is given the graph, checks it, and
holds the state. A trigger is resolved through the machine's own event and state tables (read
into one dict when the machine is built) and the model's state set, as `Machine.set_state`
does; then the listener is told. We
have no conditions and no enter/exit callbacks (the long work of a turn runs in the
interpreter's own task, never inside a callback), so the library's callback pipeline would
only add cost: 7.4 µs per transition through `model.trigger()` against about 0.3 µs this way,
on a turn budget of 100 µs. The asyncio variant of the machine costs about five times as
much again (`.concept` AMB-001).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any

from transitions import Machine

from gui_agent.exceptions import IllegalTransition
from schema import InterpreterState


class Trigger(StrEnum):
    """The only ways the state changes."""

    BEGIN = "begin"  # INIT | STOP -> RUNNING: a turn starts
    AWAIT_APPROVAL = "await_approval"  # RUNNING -> WAITING: a tool call needs a person
    RESUME = "resume"  # WAITING -> RUNNING: the person answered
    FINISH = "finish"  # RUNNING | WAITING -> STOP: the turn ended


_S = InterpreterState
TRANSITIONS: tuple[dict[str, Any], ...] = (
    {"trigger": Trigger.BEGIN.value, "source": [_S.INIT, _S.STOP], "dest": _S.RUNNING},
    {"trigger": Trigger.AWAIT_APPROVAL.value, "source": _S.RUNNING, "dest": _S.WAITING},
    {"trigger": Trigger.RESUME.value, "source": _S.WAITING, "dest": _S.RUNNING},
    {"trigger": Trigger.FINISH.value, "source": [_S.RUNNING, _S.WAITING], "dest": _S.STOP},
)

StateListener = Callable[[InterpreterState, InterpreterState, str], None]


class _Model:
    """The object `transitions` decorates with the triggers; only `StateMachine` calls them."""

    state: InterpreterState


class StateMachine:
    """One per interpreter. The `transitions` machine is built at the first transition, so an
    idle session restored from the store costs only this small object."""

    __slots__ = ("_initial", "_listener", "_machine", "_model", "_moves")

    def __init__(self, listener: StateListener, initial: InterpreterState = _S.INIT) -> None:
        self._listener = listener
        self._initial = initial
        self._machine: Machine | None = None
        self._model: _Model | None = None
        # (trigger, source) -> destination, read once from the machine's event table
        self._moves: dict[tuple[str, InterpreterState], InterpreterState] | None = None

    @property
    def state(self) -> InterpreterState:
        return self._initial if self._model is None else self._model.state

    def can(self, trigger: Trigger) -> bool:
        state = self.state
        for spec in TRANSITIONS:
            if spec["trigger"] == trigger.value:
                source = spec["source"]
                if state == source or (isinstance(source, list) and state in source):
                    return True
        return False

    def fire(self, trigger: Trigger, reason: str = "") -> None:
        """Change state or raise IllegalTransition, leaving the state as it was."""
        moves = self._moves or self._build()
        model = self._model
        assert model is not None
        source = model.state
        dest = moves.get((trigger, source))
        if dest is None:
            raise IllegalTransition(trigger.value, source.value)
        model.state = dest  # what Machine.set_state does, once the name is resolved
        self._listener(source, dest, reason)

    def _build(self) -> dict[tuple[str, InterpreterState], InterpreterState]:
        model = _Model()
        machine = Machine(
            model=model,
            states=InterpreterState,
            transitions=list(TRANSITIONS),
            initial=self._initial,
            auto_transitions=False,
        )
        moves: dict[tuple[str, InterpreterState], InterpreterState] = {}
        for name, event in machine.events.items():
            for source_name, options in event.transitions.items():
                name_of_dest = options[0].dest
                assert name_of_dest is not None  # every transition here has a destination
                dest = machine.states[name_of_dest].value
                assert isinstance(dest, InterpreterState)  # built from that enum
                moves[(name, InterpreterState[source_name])] = dest
        self._machine, self._model, self._moves = machine, model, moves
        return moves
