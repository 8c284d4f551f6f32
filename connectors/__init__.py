"""Adapters to the outside world: one module per vendor or interpreter family.

Vendor connectors are imported lazily, so ``import connectors`` loads no vendor SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connectors.anthropic import AnthropicProvider
    from connectors.openai import OpenAIProvider
    from connectors.resilience import BreakerState, CircuitBreaker, RetryPolicy

_LAZY = {
    "AnthropicProvider": "connectors.anthropic",
    "BreakerState": "connectors.resilience",
    "CircuitBreaker": "connectors.resilience",
    "OpenAIProvider": "connectors.openai",
    "RetryPolicy": "connectors.resilience",
}

__all__ = [
    "AnthropicProvider",
    "BreakerState",
    "CircuitBreaker",
    "OpenAIProvider",
    "RetryPolicy",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'connectors' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
