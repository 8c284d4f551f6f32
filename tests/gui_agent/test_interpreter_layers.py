"""The interpreter is built in layers (tracking, AutoChat, turn end, turn, history edits),
each declaring the state it reads; `Interpreter.__init__` sets all of it."""

from __future__ import annotations

from pathlib import Path

from tests.gui_agent.helpers import make


def test_an_interpreter_sets_exactly_the_state_its_layers_declare(tmp_path: Path) -> None:
    # A layer reading state that `__init__` never set fails only when that path runs (an
    # AttributeError mid-turn, say at a Stop); the type checker cannot see it.
    interpreter, _model = make(tmp_path)
    layers = type(interpreter).__mro__
    declared = {name for layer in layers for name in vars(layer).get("__annotations__", {})}
    assert len(layers) > 2 and "_open" in declared and "_auto" in declared
    assert sorted(declared - set(vars(interpreter))) == [], "declared, never set"
    assert sorted(set(vars(interpreter)) - declared) == [], "set, declared by no layer"
