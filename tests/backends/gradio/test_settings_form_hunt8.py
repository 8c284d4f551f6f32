"""The chat form's Advanced settings (Max tokens, Max steps per turn, memory, approval
timeout): read as typed, empty optional ones mean None, and a bad value is named."""

from __future__ import annotations

import pytest

from backends.gradio.form import Form
from backends.gradio.layout import setting_text
from gui_agent.exceptions import InvalidRequest
from schema import SessionSettings
from tests.backends.gradio.kit import make_page

BASE = SessionSettings(
    max_tokens=512, max_iterations=7, memory_token_budget=900, approval_timeout_s=60.0
)


async def test_typed_values_become_the_settings_and_empty_optional_ones_none() -> None:
    page = make_page()
    typed = {
        page.max_tokens: " 2048 ",
        page.max_iterations: "3",
        page.memory_exchanges: "1e1",
        page.memory_token_budget: "",
        page.approval_timeout: "",
        page.system_prompt: "Be brief.",
    }
    settings = Form.read(page, typed).session_settings(BASE)
    assert settings.max_tokens == 2048 and isinstance(settings.max_tokens, int)
    assert settings.max_iterations == 3 and settings.memory_exchanges == 10
    assert settings.memory_token_budget is None  # no budget
    assert settings.approval_timeout_s is None  # waits for ever
    assert settings.system_prompt == "Be brief."
    emptied = Form.read(page, {page.max_tokens: None}).session_settings(BASE)
    assert emptied.max_tokens is None  # the model's default


@pytest.mark.parametrize(
    ("name", "typed", "problem"),
    [
        ("max_tokens", "0", "Max tokens must be at least 1"),
        ("max_tokens", "-5", "Max tokens must be at least 1"),
        ("max_tokens", "many", "Max tokens must be a number"),
        ("max_tokens", "inf", "Max tokens must be a number"),
        ("max_tokens", "nan", "Max tokens must be a number"),
        ("max_tokens", "99.5", "Max tokens must be a whole number"),
        ("max_tokens", "99999999999", "Max tokens must be at most 2,147,483,647"),
        ("memory_token_budget", "3e9", "Memory token budget must be at most 2,147,483,647"),
        ("max_iterations", "", "Max steps per turn is empty: type a number"),
        ("max_iterations", "500", "Max steps per turn must be at most 200"),
        ("max_iterations", "201", "Max steps per turn must be at most 200"),
        ("memory_exchanges", "101", "Exchanges remembered must be at most 100"),
        ("memory_exchanges", "  ", "Exchanges remembered is empty: type a number"),
        ("memory_token_budget", "-3", "Memory token budget must be at least 1"),
        ("approval_timeout_s", "-0.5", "Approval timeout must be more than 0"),
    ],
)
async def test_a_bad_value_is_named_and_the_settings_are_kept(
    name: str, typed: str, problem: str
) -> None:
    page = make_page()
    box = page.advanced_settings()[name]
    form = Form.read(page, {box: typed, page.system_prompt: "New prompt."})
    with pytest.raises(InvalidRequest) as refused:
        form.session_settings(BASE)
    assert str(refused.value) == problem
    # a new chat's first message still goes: with the valid prompt, the bad box keeping
    # its value (and what the form has no field for too)
    kept, said = form.settings_or(BASE)
    assert said == problem
    assert kept == BASE.model_copy(update={"system_prompt": "New prompt."})


async def test_a_form_without_the_advanced_fields_keeps_the_sessions_values() -> None:
    """API callers and tests send no Advanced fields at all: that is not an empty field."""
    page = make_page()
    settings = Form.read(page, {page.chat_input: "hi"}).session_settings(BASE)
    assert settings.model_dump(exclude={"system_prompt", "temperature"}) == BASE.model_dump(
        exclude={"system_prompt", "temperature"}
    )


async def test_the_boxes_show_what_reads_back_as_the_same_settings() -> None:
    page = make_page()
    shown = {
        box: setting_text(getattr(BASE, name)) for name, box in page.advanced_settings().items()
    }
    assert shown[page.max_tokens] == "512" and shown[page.approval_timeout] == "60"
    assert setting_text(None) == "" and setting_text(2.5) == "2.5"
    assert setting_text(12_000_000) == "12000000"
    read = Form.read(page, {**shown, page.system_prompt: BASE.system_prompt})
    assert read.session_settings(SessionSettings()).model_dump(
        exclude={"temperature"}
    ) == BASE.model_dump(exclude={"temperature"})
