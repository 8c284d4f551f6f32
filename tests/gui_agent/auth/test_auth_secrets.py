"""The token signing key: from the environment, or a private file created on first run."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from gui_agent.auth import SECRET_ENV_VAR, load_or_create_signing_key
from gui_agent.exceptions import AuthError


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_first_run_creates_a_private_key_file_and_later_runs_reuse_it(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    key = load_or_create_signing_key(data_dir, env={})

    key_file = data_dir / "jwt.key"
    assert mode_of(key_file) == 0o600
    assert len(key) >= 43  # 32+ random bytes, url-safe base64
    assert load_or_create_signing_key(data_dir, env={}) == key
    assert load_or_create_signing_key(tmp_path / "elsewhere", env={}) != key


def test_the_environment_wins_and_no_file_is_written(tmp_path: Path) -> None:
    secret = "s" * 40
    assert load_or_create_signing_key(tmp_path, env={SECRET_ENV_VAR: secret}) == secret
    assert not (tmp_path / "jwt.key").exists()


def test_a_short_secret_in_the_environment_is_refused(tmp_path: Path) -> None:
    with pytest.raises(AuthError, match="at least 32"):
        load_or_create_signing_key(tmp_path, env={SECRET_ENV_VAR: "hunter2"})


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_a_key_file_others_can_read_is_refused_with_the_fix(tmp_path: Path, mode: int) -> None:
    load_or_create_signing_key(tmp_path, env={})
    key_file = tmp_path / "jwt.key"
    os.chmod(key_file, mode)

    with pytest.raises(AuthError) as refused:
        load_or_create_signing_key(tmp_path, env={})
    assert f"chmod 600 {key_file}" in str(refused.value)


def test_a_truncated_key_file_is_refused(tmp_path: Path) -> None:
    key_file = tmp_path / "jwt.key"
    key_file.write_text("short\n")
    key_file.chmod(0o600)
    with pytest.raises(AuthError, match="at least 32"):
        load_or_create_signing_key(tmp_path, env={})
