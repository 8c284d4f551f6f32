"""The interpreter's state machine: INIT → RUNNING ⇄ WAITING → STOP (→ RUNNING), never to INIT.

Built on the `transitions` library's core `Machine`. Its callbacks here are synchronous (they
only publish a `state_changed` event), and the long work of a turn runs in the interpreter's
own task, never inside a callback. The asyncio variant of the machine would cost about five
times as much per transition and add nothing for synchronous callbacks.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Any

from transitions import Machine, MachineError

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

    __slots__ = ("_initial", "_listener", "_model")

    def __init__(self, listener: StateListener, initial: InterpreterState = _S.INIT) -> None:
        self._listener = listener
        self._initial = initial
        self._model: _Model | None = None

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
        model = self._model or self._build()
        try:
            getattr(model, trigger.value)(reason=reason)
        except MachineError as exc:
            raise IllegalTransition(trigger.value, model.state.value) from exc

    def _build(self) -> _Model:
        model = _Model()
        Machine(
            model=model,
            states=InterpreterState,
            transitions=list(TRANSITIONS),
            initial=self._initial,
            after_state_change=self._announce,
            send_event=True,
            auto_transitions=False,
        )
        self._model = model
        return model

    def _announce(self, event: Any) -> None:
        source = InterpreterState(event.transition.source)
        dest = InterpreterState(event.transition.dest)
        self._listener(source, dest, str(event.kwargs.get("reason", "")))
