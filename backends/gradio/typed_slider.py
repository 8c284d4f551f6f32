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

import gradio as gr

from backends.gradio.gradio_import import no_stub_written

__all__ = ["TypedSlider"]


with no_stub_written():  # (no typed_slider.pyi: gradio_import.py)

    class TypedSlider(gr.Slider):
        """`gr.Slider`, drawn by the same browser component, that hands its value on
        unchecked."""

        is_template = True
        """Gradio's mark of a component drawn as its base class (here the slider)."""

        def preprocess(self, payload: float | None) -> float | None:  # type: ignore[override]
            """The value as the browser sent it: the range is the form's to check, so that
            it can name the value (None: the number box is empty)."""
            return payload
