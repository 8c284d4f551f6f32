"""Adapters to the outside world: one module per vendor or interpreter family.

Vendor connectors are imported lazily, so ``import connectors`` loads no vendor SDK.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from connectors.anthropic import AnthropicProvider
    from connectors.external import ExternalInterpreterAgent
    from connectors.function import FunctionInfo, FunctionModel
    from connectors.llama_local import LOCAL_MODEL_NOTICE, LlamaLocalProvider
    from connectors.openai import OpenAIProvider
    from connectors.registry import ModelInfo, ModelRegistry, ModelSpec, parse_model, resolve_models
    from connectors.resilience import BreakerState, CircuitBreaker, RetryPolicy
    from connectors.scripted import EchoModel, ScriptedModel, call, calls

_LAZY = {
    "AnthropicProvider": "connectors.anthropic",
    "BreakerState": "connectors.resilience",
    "CircuitBreaker": "connectors.resilience",
    "EchoModel": "connectors.scripted",
    "ExternalInterpreterAgent": "connectors.external",
    "FunctionInfo": "connectors.function",
    "FunctionModel": "connectors.function",
    "LOCAL_MODEL_NOTICE": "connectors.llama_local",
    "LlamaLocalProvider": "connectors.llama_local",
    "ModelInfo": "connectors.registry",
    "ModelRegistry": "connectors.registry",
    "ModelSpec": "connectors.registry",
    "OpenAIProvider": "connectors.openai",
    "RetryPolicy": "connectors.resilience",
    "ScriptedModel": "connectors.scripted",
    "call": "connectors.scripted",
    "calls": "connectors.scripted",
    "parse_model": "connectors.registry",
    "resolve_models": "connectors.registry",
}

__all__ = [
    "LOCAL_MODEL_NOTICE",
    "AnthropicProvider",
    "BreakerState",
    "CircuitBreaker",
    "EchoModel",
    "ExternalInterpreterAgent",
    "FunctionInfo",
    "FunctionModel",
    "LlamaLocalProvider",
    "ModelInfo",
    "ModelRegistry",
    "ModelSpec",
    "OpenAIProvider",
    "RetryPolicy",
    "ScriptedModel",
    "call",
    "calls",
    "parse_model",
    "resolve_models",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'connectors' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
