"""What a `--model` string that cannot work is told, as `parse_model` says it.

A known kind with nothing after it (``openai:``) lacks the model's name: it was called an
"unknown model", as if the kind were misspelt. A server URL without ``http://`` was told
the URL to write and then, in the same breath, a second "(e.g. …)" with a made-up one.
"""

from __future__ import annotations

import pytest

from connectors.model_config import parse_model
from gui_agent.exceptions import ConfigError


def refusal(text: str) -> str:
    with pytest.raises(ConfigError) as caught:
        parse_model(text, source="--model flag")
    return str(caught.value)


@pytest.mark.parametrize(
    ("text", "form"),
    [
        ("openai:", "openai:MODEL (e.g. openai:gpt-4o-mini)"),
        (" Anthropic : ", "anthropic:MODEL (e.g. anthropic:claude-sonnet-4-5)"),
        ("local:", "local:smollm2"),
        ("scripted:", "scripted:echo"),
        ("openai-compatible:", "openai-compatible:http://HOST:PORT/v1#MODEL"),
    ],
)
def test_a_kind_without_a_model_name_is_told_it_needs_one(text: str, form: str) -> None:
    said = refusal(text)
    assert "unknown model" not in said, said
    assert f"model {text!r} (from --model flag) needs " in said
    assert said.endswith(f"a model name: {form}"), said
    misspelt = refusal("opnai:gpt-4o")  # a kind that does not exist is still unknown
    assert misspelt.startswith("unknown model 'opnai:gpt-4o' (from --model flag); use one of: ")


def test_a_server_url_is_given_one_example_of_what_to_write() -> None:
    said = refusal("openai-compatible:127.0.0.1:18081/v1#x")
    assert said.endswith(
        "the URL '127.0.0.1:18081/v1' cannot be a server's base URL: it does not start "
        "with http:// or https:// (e.g. http://127.0.0.1:18081/v1)"
    ), said
    assert said.count("(e.g.") == 1
    no_fix = refusal("openai-compatible:http://:99/v1#x")  # nothing to suggest: the form
    assert no_fix.endswith(
        "it names no host (e.g. openai-compatible:http://127.0.0.1:8080/v1#MODEL)"
    ), no_fix
