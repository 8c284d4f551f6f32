"""Login: a users file with scrypt password hashes, a trusted-proxy header, and the bind check.

The users file is JSON, mode 0600: `{name: {"password_hash": ..., "created_at": ...}}`. A hash
reads `scrypt$n=16384,r=8,p=1$<salt>$<key>` (base64), so its cost can rise later without
breaking old entries. Passwords are never stored or logged.

A password's *fingerprint* (`password_fingerprint`) names the hash a login was checked
against without revealing anything about the password: API tokens carry it, so setting a
new password (`UserDB.add(name, password, replace=True)`) ends every token issued under the old
one, and the users watcher reports the change so page logins end too.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import fcntl
import hashlib
import hmac
import ipaddress
import json
import logging
import os
import re
import secrets
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gui_agent.exceptions import AuthError, ConfigError, InvalidRequest

logger = logging.getLogger(__name__)

USERS_FILE_NAME = "users.json"
NAME_PATTERN = re.compile(r"[a-zA-Z0-9_.-]{1,64}")
MIN_PASSWORD_CHARS = 8
MAX_PASSWORD_CHARS = 4096
SCRYPT_N, SCRYPT_R, SCRYPT_P = 2**14, 8, 1
_MAX_N, _MAX_R, _MAX_P = 2**20, 32, 16
_MAX_MEMORY = 256 * 1024 * 1024
_SALT_BYTES, _KEY_BYTES = 16, 32
_HASH_RE = re.compile(r"scrypt\$n=(\d+),r=(\d+),p=(\d+)\$([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+)")


def _scrypt(password: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return hashlib.scrypt(
        password.encode("utf-8"),
        salt=salt,
        n=n,
        r=r,
        p=p,
        maxmem=_MAX_MEMORY + 1024 * 1024,
        dklen=_KEY_BYTES,
    )


def hash_password(password: str, *, n: int = SCRYPT_N, r: int = SCRYPT_R, p: int = SCRYPT_P) -> str:
    """A salted scrypt hash of `password`, with its parameters."""
    salt = secrets.token_bytes(_SALT_BYTES)
    key = _scrypt(password, salt, n, r, p)
    encode = base64.b64encode
    return f"scrypt$n={n},r={r},p={p}${encode(salt).decode()}${encode(key).decode()}"


def check_password(password: str, password_hash: str) -> bool:
    """True when `password` matches `password_hash` (compared in constant time)."""
    match = _HASH_RE.fullmatch(password_hash)
    if match is None:
        return False
    n, r, p = (int(match.group(i)) for i in (1, 2, 3))
    if not (1 < n <= _MAX_N and n & (n - 1) == 0 and 0 < r <= _MAX_R and 0 < p <= _MAX_P):
        return False
    if 128 * n * r > _MAX_MEMORY:
        return False
    try:
        salt, expected = base64.b64decode(match.group(4)), base64.b64decode(match.group(5))
    except ValueError:
        return False
    return hmac.compare_digest(_scrypt(password, salt, n, r, p), expected)


FINGERPRINT_CHARS = 32
_FINGERPRINT_CONTEXT = b"gui-agent password fingerprint\0"


def password_fingerprint(password_hash: object) -> str:
    """A short digest naming one stored password hash (a new password, or the same one set
    again with a new salt, gives another). One-way: the hash holds a 128-bit salt, so the
    fingerprint cannot be used to test guesses of the password."""
    material = password_hash if isinstance(password_hash, str) else repr(password_hash)
    digest = hashlib.sha256(_FINGERPRINT_CONTEXT + material.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:FINGERPRINT_CHARS]


_DUMMY_HASH = "scrypt$n=16384,r=8,p=1$AAAAAAAAAAAAAAAAAAAAAA==$" + "A" * 43 + "="


def validate_name(name: str) -> str:
    if not isinstance(name, str) or NAME_PATTERN.fullmatch(name) is None:
        raise InvalidRequest(
            f"invalid user name {name!r}: use 1-64 letters, digits, '_', '.' or '-'"
        )
    return name


class UserDB:
    """The users file. Every call reads the file afresh, so `gui-agent users add` takes
    effect in a running server; writes replace it atomically (temp file + rename, 0600)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    def _load(self, *, missing_ok: bool = True) -> dict[str, dict[str, Any]]:
        """The users, {} for a missing file (AuthError instead when not `missing_ok`)."""
        try:
            mode = stat.S_IMODE(self.path.stat().st_mode)
        except FileNotFoundError:
            if missing_ok:
                return {}
            raise AuthError(f"the users file {self.path} is missing") from None
        if mode & 0o077:
            raise AuthError(
                f"{self.path} can be read by other users (mode {mode:04o}); "
                f"restrict it with: chmod 600 {self.path}"
            )
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:  # replaced or removed between the two calls
            if missing_ok:
                return {}
            raise AuthError(f"the users file {self.path} is missing") from None
        except OSError as exc:
            raise AuthError(f"cannot read the users file {self.path}: {exc.strerror}") from exc
        except (ValueError, UnicodeDecodeError) as exc:
            raise AuthError(f"{self.path} is not a valid users file: {exc}") from exc
        if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
            raise AuthError(f"{self.path} is not a valid users file: expected {{name: {{...}}}}")
        return data

    def _save(self, users: Mapping[str, Mapping[str, Any]]) -> None:
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(users, handle, indent=2, sort_keys=True)
                handle.write("\n")
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temp, self.path)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise

    @contextlib.contextmanager
    def _editing(self) -> Iterator[dict[str, dict[str, Any]]]:
        """Read-modify-write under an exclusive lock, so two CLI calls don't lose an edit."""
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        lock_path = self.path.with_name(self.path.name + ".lock")
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            users = self._load()
            yield users
            self._save(users)
        finally:
            os.close(fd)

    def add(self, name: str, password: str, *, replace: bool = False) -> None:
        """Add a user (or, with `replace`, set a new password). InvalidRequest for a bad name,
        a password shorter than 8 characters, or a name already taken."""
        validate_name(name)
        if not isinstance(password, str) or len(password) < MIN_PASSWORD_CHARS:
            raise InvalidRequest(f"a password needs at least {MIN_PASSWORD_CHARS} characters")
        if len(password) > MAX_PASSWORD_CHARS:
            raise InvalidRequest(f"a password may have at most {MAX_PASSWORD_CHARS} characters")
        with self._editing() as users:
            if name in users and not replace:
                raise InvalidRequest(
                    f"user {name!r} already exists; to set a new password, add --replace "
                    "(it ends their current logins)"
                )
            alike = [other for other in users if other.casefold() == name.casefold()]
            if name not in users and alike:  # (people read Alice and alice as one name)
                raise InvalidRequest(
                    f"user {alike[0]!r} already exists, a name that differs only in case: "
                    f"use {alike[0]!r} (with --replace for a new password) or another name"
                )
            users[name] = {
                "password_hash": hash_password(password),
                "created_at": datetime.now(UTC).isoformat(),
            }
        logger.info("users file %s: %s user %s", self.path, "updated" if replace else "added", name)

    def remove(self, name: str) -> bool:
        """Remove a user; False when there was none."""
        with self._editing() as users:
            removed = users.pop(name, None) is not None
        if removed:
            logger.info("users file %s: removed user %s", self.path, name)
        return removed

    def names(self, *, missing_ok: bool = True) -> list[str]:
        """The user names, sorted. A missing file has none; with `missing_ok=False` it is an
        AuthError instead (for readers that must tell "nobody" from "no file")."""
        return sorted(self._load(missing_ok=missing_ok))

    def fingerprints(self, *, missing_ok: bool = True) -> dict[str, str]:
        """Each user's name with the fingerprint of their current password hash (one read
        of the file; `missing_ok` as for `names`)."""
        return {
            name: password_fingerprint(entry.get("password_hash"))
            for name, entry in self._load(missing_ok=missing_ok).items()
        }

    def check(self, name: str, password: str) -> str | None:
        """The fingerprint of `name`'s password hash when `password` is theirs, else None.
        Takes about as long for an unknown name, so timing does not reveal which names
        exist. Blocks for tens of milliseconds: from async code use `check_async`."""
        entry = self._load().get(name) if isinstance(name, str) else None
        stored = entry.get("password_hash") if entry else None
        if not isinstance(password, str) or len(password) > MAX_PASSWORD_CHARS:
            return None
        if not isinstance(stored, str):
            check_password(password, _DUMMY_HASH)
            return None
        return password_fingerprint(stored) if check_password(password, stored) else None

    async def check_async(self, name: str, password: str) -> str | None:
        """`check` in a worker thread, leaving the event loop free."""
        return await asyncio.to_thread(self.check, name, password)

    def verify(self, name: str, password: str) -> bool:
        """True when `name` exists and `password` is theirs (see `check`)."""
        return self.check(name, password) is not None

    async def verify_async(self, name: str, password: str) -> bool:
        """`verify` in a worker thread, leaving the event loop free."""
        return await self.check_async(name, password) is not None


@dataclass(frozen=True, kw_only=True)
class ProxyHeaderAuth:
    """Takes the user name from a header set by an authenticating reverse proxy.

    Only when `trusted` is true: anyone can send the header, so enable this only when every
    request reaches GuiAgent through a proxy that sets (and overwrites) it.
    """

    trusted: bool
    header: str = "X-Forwarded-User"

    def user_from(self, headers: Mapping[str, str]) -> str | None:
        """The user the proxy vouches for; None when disabled or the header is absent.
        AuthError when the header holds something that is not a valid user name, or comes
        more than once: a proxy that adds its header rather than replacing it passes on the
        client's too, and which one came first is up to the client. (`headers` may hold a
        name more than once, as Starlette's `Headers.items()` does.)"""
        if not self.trusted:
            return None
        wanted = self.header.lower()
        values = [v for k, v in headers.items() if k.lower() == wanted]
        if len(values) > 1:
            raise AuthError(
                f"the {self.header} header was sent more than once; the proxy must replace "
                "the header a client sends, not add its own"
            )
        value = values[0] if values else None
        if value is None or not value.strip():
            return None
        value = value.strip()
        if NAME_PATTERN.fullmatch(value) is None:
            raise AuthError(f"the {self.header} header does not hold a valid user name")
        return value


def is_loopback(host: str) -> bool:
    """True for localhost, 127.0.0.0/8 and ::1 (bracketed or IPv4-mapped forms included)."""
    name = host.strip().strip("[]").rstrip(".").lower()
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name.split("%")[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def check_bind_safety(
    host: str,
    *,
    login_configured: bool,
    insecure_no_auth: bool,
    proxy_header: str | None = None,
    users_file: Path | None = None,
) -> None:
    """Refuse (ConfigError) to serve a non-loopback address without login, or with the user
    taken from a proxy's header (`proxy_header`): anyone who reaches such an address
    directly can send that header and be whoever they name (a users file does not help,
    the header is believed first). `users_file`: where `gui-agent users add` writes by
    default, named in the refusal (and said to be there already, when it is).

    With `insecure_no_auth` it only logs a warning: the operator says something in front
    (a proxy, a firewall) already decides who gets in.
    """
    if is_loopback(host):
        return
    if proxy_header is not None:
        _check_public_proxy_header(host, proxy_header, insecure_no_auth=insecure_no_auth)
        return
    if login_configured:
        return
    if insecure_no_auth:
        logger.warning(
            "serving %r without login (--insecure-no-auth): anyone who can reach it can use "
            "the agent and its tools",
            host,
        )
        return
    there = users_file is not None and users_file.is_file()
    raise ConfigError(
        f"refusing to listen on {host!r} without login: anyone who can reach that address "
        "could use the agent and run its tools. "
        + (
            f"A users file is already at {users_file}: serve with it:\n"
            if there
            else "Configure login first:\n"
            "  gui-agent users add NAME          (asks for a password, writes the users file)\n"
        )
        + f"  gui-agent serve --host {host} --auth-file {users_file or 'FILE'}\n"
        "or listen on 127.0.0.1, or pass --insecure-no-auth if a proxy in front of GuiAgent "
        "already authenticates people."
    )


def _check_public_proxy_header(host: str, header: str, *, insecure_no_auth: bool) -> None:
    if insecure_no_auth:
        logger.warning(
            "serving %r with the user taken from the %s header (--insecure-no-auth): anyone "
            "who reaches this address without going through your proxy can send '%s: NAME' "
            "and be NAME. Make sure only the proxy can reach it (a firewall, a private "
            "network), or listen on 127.0.0.1 with the proxy on this machine",
            host,
            header,
            header,
        )
        return
    raise ConfigError(
        f"refusing to listen on {host!r} with --trusted-proxy-header {header}: anyone who "
        f"reaches that address directly, not through your proxy, could send '{header}: NAME' "
        "and be NAME (a users file does not prevent it: the header is believed first). "
        "Either listen on loopback, with the proxy on this machine:\n"
        f"  gui-agent serve --host 127.0.0.1 --trusted-proxy-header {header}\n"
        "or, when the proxy runs elsewhere (another container or machine), firewall the port "
        "so that only the proxy can reach it and say so with --insecure-no-auth."
    )
