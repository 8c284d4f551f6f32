"""What the request models refuse at their edges: an image's unknown field, a token count
past any model's, a number that is not one; and what a title may hold."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from schema import AutoChatSettings, ImagePart, Message, Role, SessionSettings
from schema.requests import MAX_TOKEN_COUNT, plain_title


def test_an_image_with_a_field_it_does_not_define_is_refused() -> None:
    with pytest.raises(ValidationError, match="detail"):
        ImagePart.model_validate({"url": "https://example.com/x.png", "detail": "high"})


def test_a_stored_message_with_images_reads_back_as_it_was_written() -> None:
    message = Message(role=Role.USER, content="look", images=(ImagePart(data="iVBORw0KGgo="),))
    assert Message.model_validate_json(message.model_dump_json()) == message


@pytest.mark.parametrize(
    ("model", "field"),
    [
        (SessionSettings, "max_tokens"),
        (SessionSettings, "memory_token_budget"),
        (AutoChatSettings, "token_budget"),
    ],
)
def test_a_token_count_is_bounded_where_it_is_given_and_read_back_as_saved(
    model: type[SessionSettings | AutoChatSettings], field: str
) -> None:
    """Given (a request's body, a form), past the bound is refused; a chat saved before
    the bound existed (the store reads JSON text) still reads, at the bound."""
    assert getattr(model.model_validate({field: MAX_TOKEN_COUNT}), field) == MAX_TOKEN_COUNT
    with pytest.raises(ValidationError, match=f"less than or equal to {MAX_TOKEN_COUNT}"):
        model.model_validate({field: MAX_TOKEN_COUNT + 1})
    saved = model.model_validate_json(f'{{"{field}": {10**29}}}')
    assert getattr(saved, field) == MAX_TOKEN_COUNT


@pytest.mark.parametrize(
    ("model", "field"),
    [
        (SessionSettings, "temperature"),
        (SessionSettings, "approval_timeout_s"),
        (AutoChatSettings, "delay_s"),
        (AutoChatSettings, "time_budget_s"),
    ],
)
@pytest.mark.parametrize("value", [math.nan, math.inf])
def test_a_setting_that_is_not_a_finite_number_says_so(
    model: type[SessionSettings | AutoChatSettings], field: str, value: float
) -> None:
    """NaN read "Input should be less than or equal to 2"; infinity was taken, and saved
    as null (another meaning: no timeout, no budget)."""
    with pytest.raises(ValidationError, match="Input should be a finite number"):
        model.model_validate({field: value})


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("Plain title", "Plain title"),
        ("a\nb\tc", "a b c"),
        ("\u0000\u0001\u007f\u0085", ""),
        ("abc\u202edef\u200f", "abcdef"),
        ("  spaced   out  ", "spaced out"),
        ("Ünïcödé 👩\u200d💻 中文", "Ünïcödé 👩\u200d💻 中文"),
    ],
)
def test_a_title_is_one_plain_line(text: str, title: str) -> None:
    assert plain_title(text) == title
