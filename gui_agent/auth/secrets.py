"""The key that signs session tokens: from the environment, or a 0600 file made on first run."""

from __future__ import annotations

import logging
import os
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

from gui_agent.exceptions import AuthError

logger = logging.getLogger(__name__)

SECRET_ENV_VAR = "GUI_AGENT_JWT_SECRET"
KEY_FILE_NAME = "jwt.key"
MIN_SECRET_CHARS = 32
_GENERATE_HINT = 'python -c "import secrets; print(secrets.token_urlsafe(48))"'


def load_or_create_signing_key(data_dir: Path, env: Mapping[str, str] = os.environ) -> str:
    """The HS256 signing key.

    `GUI_AGENT_JWT_SECRET` wins when set. Otherwise the key is read from `<data_dir>/jwt.key`,
    which is created on first run with 48 random bytes and mode 0600. A key file that other
    users could read, or a key shorter than 32 characters, is refused with AuthError.
    """
    if from_env := env.get(SECRET_ENV_VAR, "").strip():
        if len(from_env) < MIN_SECRET_CHARS:
            raise AuthError(
                f"{SECRET_ENV_VAR} is {len(from_env)} characters; use at least "
                f"{MIN_SECRET_CHARS}, for example the output of: {_GENERATE_HINT}"
            )
        return from_env
    path = Path(data_dir) / KEY_FILE_NAME
    created = _create_key_file(path)
    if created is not None:
        return created
    return _read_key_file(path)


def _create_key_file(path: Path) -> str | None:
    """Write a fresh key to `path` unless it exists; returns the key, or None if it existed."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return None
    key = secrets.token_urlsafe(48)
    with os.fdopen(fd, "w", encoding="ascii") as handle:
        handle.write(key + "\n")
        handle.flush()
        os.fsync(handle.fileno())
    logger.info("created a new token signing key in %s", path)
    return key


def _read_key_file(path: Path) -> str:
    """The key in `path`; AuthError, saying what to do, for a file that others may read,
    that cannot be read (a folder, a dangling link, no permission), is not text, or is
    too short."""
    try:
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            raise AuthError(
                f"{path} can be read by other users (mode {mode:04o}); "
                f"restrict it with: chmod 600 {path}"
            )
        key = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise AuthError(
            f"cannot read the token signing key {path}: {reason}; fix it, or delete it to "
            "have a new key generated (tokens issued with the old one stop working)"
        ) from None
    if len(key) < MIN_SECRET_CHARS:
        raise AuthError(
            f"{path} holds a key of {len(key)} characters; use at least {MIN_SECRET_CHARS}, "
            f"or delete the file to have a new key generated"
        )
    return key
