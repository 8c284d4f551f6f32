"""A base URL variable that cannot be one, as the `gui-agent` commands report it.

A model its key configures is left out with the reason (the app still starts, on what else
there is); an `openai:`/`anthropic:` model named on purpose ends the command with one line
and exit code 2, as a bad `--model` does.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gui_agent.test_cli import run_cli

NO_SCHEME = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": "127.0.0.1:18607/v1"}


def test_models_lists_the_rest_and_says_why_the_key_configured_model_is_left_out(
    tmp_path: Path,
) -> None:
    result = run_cli(tmp_path, "models", "--no-probe", extra_env=NO_SCHEME)
    assert result.returncode == 0, result.stderr
    assert "Requests go to 127.0.0.1:18607/v1" not in result.stdout
    assert (
        "! openai:gpt-4o-mini (from OPENAI_API_KEY in environment) is not offered: "
        "OPENAI_BASE_URL (in the environment) is '127.0.0.1:18607/v1'"
    ) in result.stdout
    assert "(e.g. http://127.0.0.1:18607/v1)" in result.stdout
    assert "\ndefault: " in result.stdout


@pytest.mark.parametrize("command", ["models", "serve", "chat"])
def test_an_explicit_model_with_a_pasted_endpoint_in_the_env_file_stops_with_one_line(
    tmp_path: Path, command: str
) -> None:
    (tmp_path / ".env").write_text(
        "OPENAI_API_KEY=sk-test\nOPENAI_BASE_URL=http://127.0.0.1:18607/v1/chat/completions\n"
    )
    result = run_cli(tmp_path, command, "--model", "openai:gpt-4o", "--no-probe", typed="hi\n")
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    # `serve` says it as its log's error line, as it says a bad --model
    (line,) = [line for line in result.stderr.splitlines() if "OPENAI_BASE_URL" in line]
    assert (
        "openai:gpt-4o (from --model flag): OPENAI_BASE_URL (in the .env file) is "
        "'http://127.0.0.1:18607/v1/chat/completions', which cannot be a server's base URL"
    ) in line
    assert line.endswith("give the base URL http://127.0.0.1:18607/v1")


def test_chat_warns_about_the_left_out_model_and_still_chats(tmp_path: Path) -> None:
    result = run_cli(
        tmp_path,
        "chat",
        "--model",
        "scripted:echo",
        "--no-probe",
        "--workdir",
        str(tmp_path),
        extra_env=NO_SCHEME,
        typed="hello despite the typo\n/quit\n",
    )
    assert result.returncode == 0, result.stderr
    assert "hello despite the typo" in result.stdout
    assert "OPENAI_BASE_URL (in the environment) is '127.0.0.1:18607/v1'" in result.stderr
