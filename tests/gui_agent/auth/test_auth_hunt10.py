"""Login edge cases: a proxy header sent twice, a signing key file that cannot be read."""

from __future__ import annotations

from pathlib import Path

import pytest
from starlette.datastructures import Headers

from gui_agent.auth import ProxyHeaderAuth, load_or_create_signing_key
from gui_agent.exceptions import AuthError


def test_a_proxy_header_that_comes_twice_is_refused_whatever_the_order() -> None:
    proxy = ProxyHeaderAuth(trusted=True, header="X-Forwarded-User")
    for first, second in (("admin", "bob"), ("bob", "admin"), ("bob", "bob")):
        raw = [(b"x-forwarded-user", first.encode()), (b"X-Forwarded-User", second.encode())]
        with pytest.raises(AuthError, match="more than once"):
            proxy.user_from(Headers(raw=raw))
    assert proxy.user_from(Headers(raw=[(b"x-forwarded-user", b"bob")])) == "bob"
    assert proxy.user_from(Headers(raw=[])) is None


@pytest.mark.parametrize("kind", ["not text", "a folder", "a dangling link"])
def test_a_key_file_that_cannot_be_read_is_refused_in_words(tmp_path: Path, kind: str) -> None:
    """`gui-agent serve` refuses a bad data folder with one clear line (exit 2), which
    needs an AuthError: an unreadable key file escaped as a raw OSError or
    UnicodeDecodeError, a traceback instead."""
    key_file = tmp_path / "jwt.key"
    if kind == "not text":
        key_file.write_bytes(b"\xff\xfe" + b"k" * 40)
        key_file.chmod(0o600)
    elif kind == "a folder":
        key_file.mkdir(mode=0o700)
    else:
        key_file.symlink_to(tmp_path / "gone")
    with pytest.raises(AuthError, match="token signing key") as refused:
        load_or_create_signing_key(tmp_path, env={})
    assert str(key_file) in str(refused.value)
