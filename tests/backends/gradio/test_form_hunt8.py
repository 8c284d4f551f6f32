"""The chat form's AutoChat limits when a field is left empty."""

from __future__ import annotations

from backends.gradio.form import Form
from schema import AutoChatSettings
from tests.backends.gradio.kit import make_page


async def test_an_empty_limit_is_named_and_the_previous_limits_are_kept() -> None:
    page = make_page()
    previous = AutoChatSettings(max_turns=12, delay_s=3, token_budget=5000, time_budget_s=60)
    cases = {
        page.max_turns: "Max automatic turns is empty: type a number",
        page.delay: "Delay between turns is empty: type a number",
        page.token_budget: "Token budget is empty: type a number (0 for none)",
        page.time_budget: "Time budget is empty: type a number (0 for none)",
    }
    for component, message in cases.items():
        for empty in (None, "", "  "):
            kept, problem = Form.read(page, {component: empty}).autochat_or(previous, enabled=True)
            assert problem == message
            assert kept == previous.model_copy(update={"enabled": True})


async def test_a_form_without_the_limit_fields_uses_the_defaults() -> None:
    """API callers and tests send no limit fields at all: that is not an empty field."""
    page = make_page()
    auto, problem = Form.read(page, {page.chat_input: "hi"}).autochat_or(AutoChatSettings())
    assert problem is None
    assert auto == AutoChatSettings()
