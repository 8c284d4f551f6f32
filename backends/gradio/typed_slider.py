"""A slider whose handlers get its number box as the person typed it.

Gradio's slider refuses a number outside its range before any handler runs: `preprocess`
raises `gradio.exceptions.Error` ("Value 5 is greater than maximum value 2.0."), which an
event that skips the queue cannot show (no toast), and which only ends up in the server log.
The page then said nothing, and when the box was left the browser put the nearest end of the
range in it (2 for 5), which the next send saved as if typed. With this slider the value
reaches the form as typed (a number, or None for an emptied box), and the form names what is
wrong with it as it does for the Advanced settings (form.py, sidepanel.py); page.js keeps
what was typed in the box when it is left, so a send reads that too, and refuses it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import gradio as gr
from gradio import component_meta

from backends.gradio.gradio_import import STUB_WRITER

__all__ = ["TypedSlider"]


@contextmanager
def _no_stub_written() -> Iterator[None]:
    """Gradio's stub writer off while a component class is defined. It runs for every
    component class, ours too, when Gradio was imported before the page (gradio_import.py
    turns it off otherwise), and writes a `typed_slider.pyi` next to this file, which mypy
    and ruff then read instead of it."""
    writer = getattr(component_meta, STUB_WRITER, None)
    if writer is None:  # (a later Gradio without it: nothing to turn off)
        yield
        return

    def write_nothing(*args: Any, **kwargs: Any) -> None:
        """Stands in for the stub writer."""

    setattr(component_meta, STUB_WRITER, write_nothing)
    try:
        yield
    finally:
        setattr(component_meta, STUB_WRITER, writer)


with _no_stub_written():

    class TypedSlider(gr.Slider):
        """`gr.Slider`, drawn by the same browser component, that hands its value on
        unchecked."""

        is_template = True
        """Gradio's mark of a component drawn as its base class (here the slider)."""

        def preprocess(self, payload: float | None) -> float | None:  # type: ignore[override]
            """The value as the browser sent it: the range is the form's to check, so that
            it can name the value (None: the number box is empty)."""
            return payload
