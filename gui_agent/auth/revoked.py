"""Tokens signed out before they expire (`POST /api/logout`), refused from then on.

A token is signed and carries its own expiry, so nothing on the server holds it: signing out
has to remember it. `RevokedTokens` keeps each signed-out token's id (its `jti`) until the
token would have expired anyway, in a file beside the signing key (`revoked-tokens.json`,
mode 0600), so that a restart does not make a signed-out token good again. Only ids and
times are written: no token, nothing that signs in.

Looking a token up is a dict lookup (every request does it); the file is written only on a
sign-out, then holds only the ids not yet expired (at most `MAX_REVOKED`: the ones expiring
first go when there are more, a bound no sign-in rate reaches within a token's lifetime).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from gui_agent.log_text import loggable

__all__ = ["MAX_REVOKED", "REVOKED_FILE_NAME", "RevokedTokens"]

logger = logging.getLogger(__name__)

REVOKED_FILE_NAME: Final = "revoked-tokens.json"
MAX_REVOKED: Final = 100_000


class RevokedTokens:
    """Ids of signed-out tokens, each kept until its token's expiry. `path` None: kept in
    memory only (tests, an API app built without a data folder). Safe to use from threads
    (`revoke` writes the file: call it off the event loop)."""

    def __init__(
        self,
        path: Path | None = None,
        *,
        until: dict[str, float] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._path = path
        self._until: dict[str, float] = dict(until or {})
        self._clock = clock
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: Path, *, clock: Callable[[], float] = time.time) -> RevokedTokens:
        """The tokens signed out as `path` lists them (none when it does not exist yet). A
        file that cannot be read is logged and taken as empty: the server starts, and its
        signed-out tokens are good again until they expire, as before sign-outs were kept."""
        until: dict[str, float] = {}
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
            now = clock()
            until = {
                str(token_id): float(expires)
                for token_id, expires in data.items()
                if isinstance(expires, int | float) and expires > now
            }
        except FileNotFoundError:
            pass
        except (OSError, ValueError) as error:
            logger.error(
                "cannot read the signed-out tokens in %s (%s): tokens signed out before "
                "this start are good again until they expire",
                path,
                loggable(error),
            )
        return cls(path, until=until, clock=clock)

    def __contains__(self, token_id: object) -> bool:
        expires = self._until.get(token_id) if isinstance(token_id, str) else None
        return expires is not None and expires > self._clock()

    def __len__(self) -> int:
        return len(self._until)

    def revoke(self, token_id: str, expires: float) -> None:
        """Refuse the token `token_id` (valid until `expires`, seconds since the epoch) from
        now on, and write the file. OSError when the file cannot be written: the token is
        refused all the same until the server stops."""
        if not token_id:
            raise ValueError("a token id is needed to sign a token out")
        with self._lock:
            now = self._clock()
            kept = {t: e for t, e in self._until.items() if e > now}
            kept[token_id] = expires
            if len(kept) > MAX_REVOKED:
                latest = sorted(kept.items(), key=lambda item: item[1])[-MAX_REVOKED:]
                kept = dict(latest)
            self._until = kept
            if self._path is not None:
                _write(self._path, kept)


def _write(path: Path, until: dict[str, float]) -> None:
    """`until` as JSON at `path`, mode 0600, replaced whole (never half written)."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(until, handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
