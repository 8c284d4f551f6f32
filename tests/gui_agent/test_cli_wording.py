"""What the `gui-agent` commands say when a person asks for something that cannot be done:
each refusal names the way to do what was meant.

`gui-agent users add alice` for a user that exists said only "already exists", though the
same command with `--replace` sets their new password.
"""

from __future__ import annotations

from pathlib import Path

from tests.gui_agent.test_cli import run_cli


def test_adding_a_user_that_exists_points_to_replace_which_then_works(tmp_path: Path) -> None:
    users = str(tmp_path / "users.json")
    add = ("users", "add", "alice", "--auth-file", users, "--password-stdin")
    assert run_cli(tmp_path, *add, typed="the first password\n").returncode == 0
    again = run_cli(tmp_path, *add, typed="a second password\n")
    assert again.returncode == 2
    assert again.stderr == (
        "gui-agent: user 'alice' already exists; to set a new password, add --replace "
        "(it ends their current logins)\n"
    )
    replaced = run_cli(tmp_path, *add, "--replace", typed="a second password\n")
    assert replaced.returncode == 0, replaced.stderr


def test_models_with_a_kind_but_no_model_name_says_it_needs_one(tmp_path: Path) -> None:
    result = run_cli(tmp_path, "models", "--no-probe", "--model", "openai:")
    assert result.returncode == 2
    assert result.stderr == (
        "gui-agent: model 'openai:' (from --model flag) needs a model name: "
        "openai:MODEL (e.g. openai:gpt-4o-mini)\n"
    )
