"""`gui-agent models --model scripted:echo` must not say "No model is configured" of the
model the person just named: that notice belongs to the fallback `resolve_models` adds when
nothing was configured."""

from __future__ import annotations

from connectors.registry import resolve_models


async def test_an_echo_model_asked_for_is_not_described_as_nothing_configured() -> None:
    registry = await resolve_models(
        explicit=["scripted:echo"], env={}, dotenv_path=None, probe_local=False, embedded=False
    )
    (info,) = registry.describe()
    assert info.spec.source == "--model flag"
    assert "No model is configured" not in info.note


async def test_the_fallback_echo_model_says_nothing_is_configured() -> None:
    registry = await resolve_models(
        explicit=[], env={}, dotenv_path=None, probe_local=False, embedded=False
    )
    (info,) = registry.describe()
    assert "No model is configured" in info.note
