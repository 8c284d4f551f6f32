"""OpenAI-compatible servers running on this machine, found by asking their usual ports.

Ollama, LM Studio, the llama.cpp server and vLLM each listen on a loopback port of their
own. `probe_local_servers` asks them all at once, with a short timeout, which models they
list, and offers each that answers with its first chat model (embedding and reranking
models passed over); one still loading its model, which cannot list it yet, is offered as
`LOADING_MODEL_NAME`. The model names come from the server: they are logged escaped
(`connectors.log_text.loggable`).
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import httpx

from connectors.log_text import loggable
from connectors.model_config import ModelSpec
from connectors.resilience import LOADING_WORDS
from gui_agent.exceptions import ConfigError

__all__ = [
    "DEFAULT_LOCAL_SERVERS",
    "LOADING_MODEL_NAME",
    "LocalServer",
    "probe_local_servers",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LocalServer:
    """An OpenAI-compatible server that usually listens on a loopback port."""

    label: str
    port: int
    host: str = "127.0.0.1"


DEFAULT_LOCAL_SERVERS: Final = (
    LocalServer("Ollama", 11434),
    LocalServer("LM Studio", 1234),
    LocalServer("llama.cpp server", 8080),
    LocalServer("vLLM", 8000),
)

LOADING_MODEL_NAME: Final = "default"
"""The model name a local server still loading its model is registered with: it cannot
list its model yet, and a server that loads one model (llama.cpp's) answers whatever
model a request names."""


def _loading(response: httpx.Response) -> bool:
    """Whether `response` is a server's 503 saying it is still loading its model (older
    llama.cpp servers answer even ``/v1/models`` so while they load)."""
    return response.status_code == 503 and any(
        words in response.text.lower() for words in LOADING_WORDS
    )


async def _probe_one(client: httpx.AsyncClient, server: LocalServer) -> ModelSpec | None:
    base = f"http://{server.host}:{server.port}"
    try:
        response = await client.get(f"{base}/v1/models")
        if _loading(response):
            source = (
                f"{server.label} answering on {server.host}:{server.port}, still loading its model"
            )
            logger.info("%s is still loading its model; offering it all the same", loggable(base))
            return ModelSpec("openai-compatible", LOADING_MODEL_NAME, f"{base}/v1", source)
        if response.status_code == 200:
            models = [str(item["id"]) for item in response.json().get("data", []) if "id" in item]
        else:  # older Ollama: its own API only
            response = await client.get(f"{base}/api/tags")
            response.raise_for_status()
            models = [str(item["name"]) for item in response.json().get("models", [])]
    except (httpx.HTTPError, ValueError, KeyError, TypeError, AttributeError):
        return None
    chat_models = [m for m in models if not _NOT_CHAT.search(m)]
    if not chat_models:
        logger.info(
            "%s answers on %s but lists no chat model (%s)",
            loggable(server.label),
            loggable(base),
            models,  # a list shows its names escaped
        )
        return None
    source = f"{server.label} answering on {server.host}:{server.port}"
    return ModelSpec("openai-compatible", chat_models[0], f"{base}/v1", source)


_NOT_CHAT: Final = re.compile(
    r"embed|rerank|minilm|mpnet|colbert|splade|paraphrase-|sentence-transformers/"
    r"|(?:^|[/:_-])(?:bge|gte|e5)(?=[-_.:]|$)",
    re.IGNORECASE,
)
"""Model ids that name no chat model: LM Studio ships an embedding model and lists it with
the others; Ollama lists the one a person pulled for retrieval, newest first. Most say
``embed``; the common ones that do not are the BGE, GTE and E5 families (``bge-m3``,
``BAAI/bge-large-en-v1.5``, ``intfloat/multilingual-e5-large``, ``thenlper/gte-base``) and
the sentence-transformers models (``all-minilm``, ``all-mpnet-base-v2``,
``paraphrase-multilingual``)."""


async def probe_local_servers(
    servers: Sequence[LocalServer] = DEFAULT_LOCAL_SERVERS, *, timeout_s: float = 0.3
) -> list[ModelSpec]:
    """The servers that answer, in the order given, each with the first chat model it lists
    (embedding and reranking models are passed over).

    Loopback only; the environment's proxy settings are ignored (`trust_env=False`).
    """
    for server in servers:
        if server.host not in ("127.0.0.1", "::1", "localhost"):
            raise ConfigError(f"local servers are probed on loopback only, not {server.host}")
    async with httpx.AsyncClient(timeout=timeout_s, trust_env=False) as client:
        found = await asyncio.gather(*(_probe_one(client, server) for server in servers))
    return [spec for spec in found if spec is not None]
