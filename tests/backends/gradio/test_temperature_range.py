"""The temperature's number box takes any number: a value out of the range 0 to 2, an
emptied box or one that is no number is named (value and range) and not saved. Driven as
the browser's events would run them (no browser; the page itself, where the box keeps what
was typed when it is left: test_page_settings_hunt8.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from backends.gradio.bases import Base
from backends.gradio.form import TEMPERATURE_RANGE, Form
from backends.gradio.handlers import tab_of
from backends.gradio.layout import Page
from backends.gradio.sidepanel import SidePanel
from backends.gradio.typed_slider import TypedSlider
from connectors.scripted import ScriptedModel
from gui_agent.exceptions import InvalidRequest
from gui_agent.interpreter import Interpreter
from schema import SessionSettings
from tests.backends.gradio.kit import make_page, page_handlers

ROOT = Path(__file__).resolve().parents[3]
NOT_SAVED = "Not saved: the chat keeps that setting as it was until you fix it."
BASE = SessionSettings(temperature=0.3)


@pytest.fixture
async def panel(tmp_path: Path) -> AsyncIterator[tuple[Page, SidePanel, Interpreter]]:
    page, manager, handlers = await page_handlers(tmp_path, ScriptedModel(default="ok"))
    try:
        interpreter = await manager.create("local")
        await interpreter.update(settings=BASE)
        side = SidePanel(handlers)
        side.handlers.news.open(tab_of(None), "local")
        yield page, side, interpreter
    finally:
        await manager.close()


def form_with(page: Page, session_id: str, temperature: object, ticket: int) -> dict[Any, Any]:
    """The form as the browser sends it when the temperature box shows `temperature` (a
    number, or None when it is empty)."""
    return {
        page.session_id: session_id,
        page.system_prompt: BASE.system_prompt,
        page.temperature: temperature,
        page.form_base: Base(session_id, {"temperature": 0.3}).encode(),
        page.ticket: str(ticket),
    }


@pytest.mark.parametrize(
    ("typed", "problem"),
    [
        (5, "Temperature must be from 0 to 2, not 5"),
        (2.05, "Temperature must be from 0 to 2, not 2.05"),
        (-1, "Temperature must be from 0 to 2, not -1"),
        (-0.5, "Temperature must be from 0 to 2, not -0.5"),
        (None, "Temperature is empty: type a number from 0 to 2"),
        ("", "Temperature is empty: type a number from 0 to 2"),
        ("warm", "Temperature must be a number from 0 to 2"),
        ("nan", "Temperature must be a number from 0 to 2"),
        (float("inf"), "Temperature must be a number from 0 to 2"),
        (True, "Temperature must be a number from 0 to 2"),
    ],
)
async def test_a_temperature_out_of_range_or_not_a_number_is_named_and_kept(
    typed: object, problem: str
) -> None:
    page = make_page()
    form = Form.read(page, {page.temperature: typed, page.system_prompt: "New prompt."})
    with pytest.raises(InvalidRequest) as refused:
        form.session_settings(BASE)
    assert str(refused.value) == problem
    assert form.problem("temperature") == problem
    kept, said = form.settings_or(BASE)  # (what a new chat's first message is made with)
    assert said == problem
    assert kept == BASE.model_copy(update={"system_prompt": "New prompt."})


async def test_the_slider_hands_on_what_is_typed_over_the_schemas_range() -> None:
    """Gradio's slider refused a value out of its range before any handler ran (a bare
    traceback in the server log, nothing on the page); its range is the schema's."""
    page = make_page()
    slider = page.temperature
    assert isinstance(slider, TypedSlider)
    assert slider.preprocess(5) == 5 and slider.preprocess(None) is None
    assert slider.get_block_name() == "slider"  # (drawn by the browser's own slider)
    assert (slider.minimum, slider.maximum) == TEMPERATURE_RANGE == (0.0, 2.0)


async def test_a_temperature_typed_out_of_range_is_named_under_the_settings_and_not_saved(
    panel: tuple[Page, SidePanel, Interpreter],
) -> None:
    """Gradio's slider refused the value before this handler ran: no note, and a bare
    traceback in the server log."""
    page, side, interpreter = panel
    sid = interpreter.id
    save = side.settings_saver("temperature")
    said = await save(form_with(page, sid, 5, 1), None)
    assert said[page.settings_note] == f"Temperature must be from 0 to 2, not 5. {NOT_SAVED}"
    assert page.form_base not in said  # (the box is not in step with the chat)
    said = await save(form_with(page, sid, -1, 2), None)
    assert said[page.settings_note] == f"Temperature must be from 0 to 2, not -1. {NOT_SAVED}"
    said = await save(form_with(page, sid, None, 3), None)
    assert said[page.settings_note].startswith("Temperature is empty: type a number from 0")
    assert interpreter.session.settings == BASE

    # the ends of the range are in it (the browser sends 2 for 2.0)
    for ticket, value in enumerate((2, 0, 1.5), start=4):
        said = await save(form_with(page, sid, value, ticket), None)
        assert said[page.settings_note] == ""
        assert interpreter.session.settings.temperature == value


def test_the_slider_class_writes_no_stub_next_to_its_module(tmp_path: Path) -> None:
    """Gradio writes a `.pyi` next to the module of each component class defined while its
    stub writer is on (Gradio imported before the page); for the slider's module, mypy and
    ruff would read that stub instead. Checked in a fresh interpreter, with a writer that
    only records (the real one would write into the source tree)."""
    assert_no_stub_written(tmp_path, "backends.gradio.typed_slider", "TypedSlider")


def assert_no_stub_written(tmp_path: Path, module: str, name: str) -> None:
    """Imports component class `name` of `module` in a fresh interpreter where Gradio was
    imported first, with a stub writer that only records: none is asked for, the writer is
    Gradio's again after, and no `.pyi` lies next to the module."""
    code = f"""
        import gradio
        import gradio.component_meta as meta
        asked = []
        meta.create_or_modify_pyi = lambda cls, name, events: asked.append(name)
        from {module} import {name}
        print(asked, meta.create_or_modify_pyi.__name__)
    """
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(ROOT), "GRADIO_ANALYTICS_ENABLED": "False"},
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["[]", "<lambda>"]  # (and the writer is Gradio's again)
    assert not (ROOT / Path(*module.split("."))).with_suffix(".pyi").exists()
