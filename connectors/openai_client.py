"""The `openai` SDK client an `OpenAIProvider` sends its requests through, and its name.

Which key goes where: the key given, else the variable `key_env` (``OPENAI_API_KEY``
unless told). The OpenAI service itself needs one (`ConfigError` without it); a compatible
server gets `NO_KEY` when none is set. Whether the client leads to the OpenAI service is
one check of the host of the base URL the client uses (`openai_mapping.is_openai_service`;
so ``OPENAI_BASE_URL`` counts as much as ``base_url``). The SDK's own retries are off:
`connectors.resilience` retries, before anything was streamed.
"""

from __future__ import annotations

import os

import openai

from connectors.base import hide_url_passwords, shown_url
from connectors.openai_mapping import is_openai_service
from gui_agent.exceptions import ConfigError

__all__ = ["KEY_ENV", "NO_KEY", "openai_client", "provider_name"]

KEY_ENV = "OPENAI_API_KEY"
NO_KEY = "no-key-needed"
"""Sent to OpenAI-compatible servers when no key is configured (most local ones ignore it)."""


def openai_client(
    *, api_key: str | None, base_url: str | None, timeout_s: float, key_env: str = KEY_ENV
) -> tuple[openai.AsyncOpenAI, bool]:
    """The client for `base_url` (None: ``OPENAI_BASE_URL``, else the OpenAI service), and
    whether it leads to the OpenAI service; ConfigError when the service would get no key."""
    key = api_key or os.environ.get(key_env)
    hide_url_passwords()
    client = openai.AsyncOpenAI(
        api_key=key or NO_KEY, base_url=base_url, timeout=timeout_s, max_retries=0
    )
    openai_service = is_openai_service(str(client.base_url))
    if not key and openai_service:
        raise ConfigError(
            f"no OpenAI API key: set {key_env}, or pass base_url for a local "
            "OpenAI-compatible server"
        )
    return client, openai_service


def provider_name(model: str, *, base_url: str | None, name_prefix: str) -> str:
    """The provider's name: ``PREFIX:MODEL``, or with a base URL ``PREFIX:URL#MODEL`` (the
    prefix ``openai`` then reads ``openai-compatible``; a password in the URL as ``***``)."""
    if base_url is None:
        return f"{name_prefix}:{model}"
    prefix = "openai-compatible" if name_prefix == "openai" else name_prefix
    return f"{prefix}:{shown_url(base_url)}#{model}"
