"""Where each session's tools work, and removing that folder with the session.

Every session served by a `SessionManager` works in `root / owner folder / session id`. The
folder belongs to the session: deleting the chat (or retention deleting it) deletes the
files its tools made, so that a deleted chat leaves nothing of what it said or wrote behind.
"""

from __future__ import annotations

import logging
import os
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from gui_agent.log_text import loggable

logger = logging.getLogger(__name__)


def owner_folder(owner: str) -> str:
    """A folder name for `owner` that cannot escape its parent."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in owner)
    return safe.strip(".") or "_"


def session_folder(root: Path, owner: str, session_id: str) -> Path:
    """The working folder of session `session_id` of `owner` under `root`."""
    return root / owner_folder(owner) / owner_folder(session_id)


def remove_session_folder(root: Path, owner: str, session_id: str) -> bool:
    """Delete the session's working folder and everything in it; True when there was one.

    Never follows a link: a folder that is itself a link is unlinked, links inside are
    removed as links. A file or folder the code there made read-only is made writable and
    removed. What cannot be removed is logged and left (the chat is deleted either way)."""
    folder = session_folder(root, owner, session_id)
    if folder.is_symlink():
        folder.unlink()
        return True
    if not folder.is_dir():
        return False
    problems: list[str] = []
    shutil.rmtree(folder, onerror=_retry_writable(problems))
    if problems:
        logger.warning(
            "session %s: %d item(s) of its working folder %s could not be deleted: %s",
            session_id,
            len(problems),
            folder,
            loggable(problems[0]),
        )
    return True


def _retry_writable(problems: list[str]) -> Callable[[Any, str, Any], None]:
    def retry(function: Any, path: str, _info: Any) -> None:
        parent = os.path.dirname(path)
        try:
            for target in (parent, path):
                mode = os.lstat(target).st_mode
                if stat.S_ISDIR(mode):
                    os.chmod(target, stat.S_IMODE(mode) | stat.S_IRWXU)
            function(path)
        except OSError as exc:
            problems.append(f"{path}: {exc.strerror or exc}")

    return retry
