"""Which names the server answers to: the `Host` header of a request against an allow-list.

A web page on another site can reach an app on this machine through DNS rebinding: its own
name (attacker.example) is made to resolve to 127.0.0.1, so to the browser the app is
on the page's own origin, and the page may send it anything, a proxy's user header
included. Such a request still carries the page's name in its `Host` header; a request
that names a loopback address, `localhost`, or a name the operator listed
(`allowed_hosts`, `GUI_AGENT_ALLOWED_HOSTS`) cannot come from such a page.

Entries are host names (`chat.example.com`), IP addresses, or `*.example.com` for every
name under example.com (not example.com itself: list it too). They are compared without
the port and without regard to case; a trailing dot is ignored.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Collection

from gui_agent.auth.users import is_loopback

__all__ = ["LOOPBACK_NAMES", "host_allowed", "host_pattern"]

LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
"""How the names always answered are shown (any 127.x.y.z address is answered too)."""
_LABEL = r"(?!-)[a-z0-9_-]{1,63}(?<!-)"
_HOST_NAME = re.compile(rf"^{_LABEL}(\.{_LABEL})*$")
_WILDCARD = "*."


def host_pattern(entry: str) -> str:
    """An allow-list entry, normalised (lower case, no trailing dot, an IP address in its
    short form, no brackets); ValueError saying what is wrong with it otherwise."""
    text = entry.strip()
    wildcard = text.startswith(_WILDCARD)
    name = text.removeprefix(_WILDCARD) if wildcard else text
    if not wildcard and name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    address = _address(name)
    if address is not None:
        if wildcard:
            raise ValueError(f"{entry!r}: a * goes only before a host name, not an address")
        return address
    name = name.lower().rstrip(".")
    if not _HOST_NAME.match(name) or len(name) > 253:
        raise ValueError(f"{entry!r} is not a host name: {_expected(name)}")
    return _WILDCARD + name if wildcard else name


def host_allowed(name: str, patterns: Collection[str]) -> bool:
    """True when `name` (a Host header's name part, without the port) is a loopback name or
    matches one of `patterns` (normalised by `host_pattern`)."""
    if is_loopback(name):
        return True
    if not patterns:
        return False
    key = name.strip().lower().rstrip(".")
    address = _address(key.strip("[]"))
    if address is not None:
        return address in patterns
    if not _HOST_NAME.match(key):
        return False
    if key in patterns:
        return True
    return any(pattern.startswith(_WILDCARD) and key.endswith(pattern[1:]) for pattern in patterns)


def _address(text: str) -> str | None:
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def _expected(name: str) -> str:
    if "://" in name or "/" in name:
        return "write the name alone, without http:// or a path"
    if ":" in name:
        return "write the name alone, without a port (every port is answered)"
    if "*" in name:
        return "a * is allowed only as the first label, as in *.example.com"
    if not name.isascii():
        return "write an international name in its xn-- form"
    return "expected a name such as chat.example.com or *.example.com"
