"""Session tokens: only our own, unexpired HS256 tokens get through."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from jose import jwt

from gui_agent.auth import Claims, TokenService
from gui_agent.exceptions import AuthError

SECRET = "k" * 48
T0 = 1_750_000_000.0


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def tokens(clock: Clock) -> TokenService:
    return TokenService(SECRET, ttl_s=3600, clock=clock)


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def hand_made(header: dict[str, Any], claims: dict[str, Any], key: str | None = SECRET) -> str:
    """A token built without a JWT library, signed with HMAC-SHA256 (or unsigned)."""
    signing_input = f"{b64url(json.dumps(header).encode())}.{b64url(json.dumps(claims).encode())}"
    if key is None:
        return signing_input + "."
    mac = hmac.new(key.encode(), signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64url(mac)}"


def good_claims(**changes: Any) -> dict[str, Any]:
    claims = {"sub": "alice", "iat": int(T0), "exp": int(T0) + 60, "iss": "gui-agent", "jti": "x"}
    claims.update(changes)
    return {k: v for k, v in claims.items() if v is not None}


def test_an_issued_token_verifies_with_its_claims(tokens: TokenService) -> None:
    token = tokens.issue("alice", password_fingerprint="f" * 32)
    claims = tokens.verify(token)

    assert claims == Claims(
        subject="alice",
        expires_at=datetime.fromtimestamp(T0 + 3600, UTC),
        issued_at=datetime.fromtimestamp(T0, UTC),
        token_id=claims.token_id,
        password_fingerprint="f" * 32,
    )
    assert len(claims.token_id) == 32
    assert tokens.verify(tokens.issue("bob")).password_fingerprint is None
    assert tokens.issue("alice") != tokens.issue("alice")  # every token has its own jti


@pytest.mark.parametrize("sid", ["s-1", "", None, 42])
def test_a_session_scope_claim_is_refused_not_silently_widened(
    tokens: TokenService, sid: Any
) -> None:
    """No token is ever issued with `sid`; one that carries it (even signed with our key)
    would claim a narrower scope than the full access it would really get, so it is refused
    whatever its value."""
    claims = {**good_claims(), "sid": sid}
    scoped = hand_made({"alg": "HS256", "typ": "JWT"}, claims)
    with pytest.raises(AuthError, match="never issues"):
        tokens.verify(scoped)
    assert "sid" not in jwt.get_unverified_claims(tokens.issue("alice"))


def test_hand_made_hs256_token_with_our_key_is_accepted(tokens: TokenService) -> None:
    # Proves the forgery tests below fail for their forgery, not for a broken helper.
    token = hand_made({"alg": "HS256", "typ": "JWT"}, good_claims())
    assert tokens.verify(token).subject == "alice"


def test_expiry_follows_the_clock(tokens: TokenService, clock: Clock) -> None:
    token = tokens.issue("alice")
    clock.now = T0 + 3599
    assert tokens.verify(token).subject == "alice"
    clock.now = T0 + 3600
    with pytest.raises(AuthError, match="expired"):
        tokens.verify(token)


def test_a_token_signed_with_another_key_is_refused(tokens: TokenService, clock: Clock) -> None:
    forged = TokenService("z" * 48, clock=clock).issue("alice")
    with pytest.raises(AuthError, match="invalid token"):
        tokens.verify(forged)


def test_a_token_with_an_edited_payload_is_refused(tokens: TokenService) -> None:
    header, _, signature = tokens.issue("alice").split(".")
    payload = b64url(json.dumps(good_claims(sub="admin")).encode())
    with pytest.raises(AuthError):
        tokens.verify(f"{header}.{payload}.{signature}")


@pytest.mark.parametrize("alg", ["none", "None", "NONE"])
def test_an_unsigned_alg_none_token_is_refused(tokens: TokenService, alg: str) -> None:
    unsigned = hand_made({"alg": alg, "typ": "JWT"}, good_claims(), key=None)
    with pytest.raises(AuthError, match="algorithm"):
        tokens.verify(unsigned)


@pytest.mark.parametrize("alg", ["HS512", "HS384", "RS256", "ES256"])
def test_any_algorithm_but_hs256_is_refused_even_with_a_valid_mac(
    tokens: TokenService, alg: str
) -> None:
    # An RS256 header with an HMAC made from our secret is the classic key-confusion forgery.
    forged = hand_made({"alg": alg, "typ": "JWT"}, good_claims())
    with pytest.raises(AuthError, match=f"algorithm '{alg}'"):
        tokens.verify(forged)


def test_a_real_hs512_token_with_our_secret_is_refused(tokens: TokenService) -> None:
    token = jwt.encode(good_claims(), SECRET, algorithm="HS512")
    with pytest.raises(AuthError, match="algorithm 'HS512'"):
        tokens.verify(token)


@pytest.mark.parametrize(
    "claims",
    [
        good_claims(sub=None),
        good_claims(sub=""),
        good_claims(exp=None),
        good_claims(iat=None),
        good_claims(iss=None),
        good_claims(iss="someone-else"),
        good_claims(exp="tomorrow"),
        good_claims(exp=True),
        good_claims(iat=int(T0) + 3600),
        good_claims(sub=42),
    ],
    ids=[
        "no-sub",
        "empty-sub",
        "no-exp",
        "no-iat",
        "no-iss",
        "wrong-iss",
        "text-exp",
        "bool-exp",
        "future-iat",
        "number-sub",
    ],
)
def test_tokens_missing_or_bending_claims_are_refused(
    tokens: TokenService, claims: dict[str, Any]
) -> None:
    with pytest.raises(AuthError):
        tokens.verify(hand_made({"alg": "HS256", "typ": "JWT"}, claims))


@pytest.mark.parametrize(
    "garbage",
    ["", "abc", "a.b.c", "...", "x" * 20_000, "eyJhbGciOiJIUzI1NiJ9.bm90IGpzb24.c2ln", None, 42],
)
def test_garbage_is_refused(tokens: TokenService, garbage: Any) -> None:
    with pytest.raises(AuthError):
        tokens.verify(garbage)


def test_an_empty_secret_is_refused() -> None:
    with pytest.raises(AuthError):
        TokenService("")


@pytest.mark.parametrize("claim", ["exp", "iat", "nbf"])
@pytest.mark.parametrize(
    "value",
    [1e12, 1e308, -1e12, 10**400, float("inf"), float("-inf"), float("nan")],
    ids=["year-33658", "1e308", "before-year-1", "huge-int", "inf", "-inf", "nan"],
)
def test_a_time_claim_that_is_no_real_date_makes_the_token_invalid(
    tokens: TokenService, claim: str, value: float
) -> None:
    # Signed with our key, so only the claim's value can be what is refused.
    token = hand_made({"alg": "HS256", "typ": "JWT"}, good_claims(**{claim: value}))
    with pytest.raises(AuthError):
        tokens.verify(token)


def test_not_before_follows_the_clock(tokens: TokenService, clock: Clock) -> None:
    later = hand_made({"alg": "HS256", "typ": "JWT"}, good_claims(nbf=int(T0) + 30))
    assert tokens.verify(later).subject == "alice"  # within the clock skew allowed for iat
    early = hand_made({"alg": "HS256", "typ": "JWT"}, good_claims(nbf=int(T0) + 600))
    with pytest.raises(AuthError, match="not valid yet"):
        tokens.verify(early)
    clock.now = T0 + 590
    early_again = hand_made(
        {"alg": "HS256", "typ": "JWT"}, good_claims(nbf=int(T0) + 600, exp=int(T0) + 3600)
    )
    assert tokens.verify(early_again).subject == "alice"
