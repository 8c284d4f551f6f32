"""Which models a server offers, where each came from, and which one is the default.

Precedence (every source found is registered; the first is the default):

1. models named explicitly (`--model` flags or the config file), in the order given;
2. `OPENAI_API_KEY` (with `OPENAI_BASE_URL`, model from `OPENAI_MODEL` or gpt-4o-mini);
3. `ANTHROPIC_API_KEY` (model from `ANTHROPIC_MODEL` or `DEFAULT_ANTHROPIC_MODEL`);
4. a local OpenAI-compatible server answering on its usual loopback port (Ollama,
   LM Studio, llama.cpp server, vLLM), probed concurrently with a short timeout (one
   still loading its model, which cannot list it yet, is offered as `LOADING_MODEL_NAME`);
5. the embedded offline model (llama-cpp-python and the SmolLM2 weights installed);
6. the scripted echo model, only when nothing else is there.

How long a server may stay silent (before its first byte and between two) is
`GUI_AGENT_MODEL_TIMEOUT` seconds (default 60; `MODEL_TIMEOUT_ENV`), for every vendor and
compatible server; a timeout names the variable.

The environment is the process environment overlaid on a `.env` file in the working
folder (read without touching `os.environ`; a real variable wins). Keys live in the
registry privately: never in a `ModelSpec`, `describe()`, a repr or a log line.
Providers are built on first `get` and cached; the vendor modules load only then.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, Literal, cast, get_args
from urllib.parse import urlsplit

import httpx

from connectors.base import DEFAULT_TIMEOUT_S, MODEL_TIMEOUT_ENV, shown_url
from connectors.llama_local import (
    LOCAL_MODEL_NOTICE,
    SETUP_HINT,
    LlamaLocalProvider,
    local_model_available,
)
from connectors.resilience import LOADING_WORDS
from gui_agent.exceptions import ConfigError
from gui_agent.llm import LLMProvider

if TYPE_CHECKING:
    from gui_agent.tokens import TokenCounter

__all__ = [
    "DEFAULT_ANTHROPIC_MODEL",
    "DEFAULT_LOCAL_SERVERS",
    "DEFAULT_OPENAI_MODEL",
    "ECHO_NOTICE",
    "MODEL_FORMS",
    "MODEL_TIMEOUT_ENV",
    "LocalServer",
    "ModelInfo",
    "ModelKind",
    "ModelRegistry",
    "ModelSpec",
    "parse_model",
    "probe_local_servers",
    "read_environment",
    "resolve_models",
]

logger = logging.getLogger(__name__)

ModelKind = Literal["openai", "anthropic", "openai-compatible", "local", "scripted"]

DEFAULT_OPENAI_MODEL: Final = "gpt-4o-mini"
DEFAULT_ANTHROPIC_MODEL: Final = "claude-sonnet-4-5"
COMPATIBLE_KEY_ENV: Final = "OPENAI_COMPATIBLE_API_KEY"
"""The key sent to OpenAI-compatible servers (OpenRouter, Groq, Together, a local server
behind a key); without it they get `LOCAL_SERVER_KEY`."""
LOCAL_SERVER_KEY: Final = "no-key-needed"
"""Sent to OpenAI-compatible servers: never the OpenAI key (that would leak it to them)."""

MODEL_FORMS: Final = (
    "openai:MODEL (e.g. openai:gpt-4o-mini), "
    "anthropic:MODEL (e.g. anthropic:claude-sonnet-4-5), "
    "openai-compatible:URL#MODEL (e.g. openai-compatible:http://127.0.0.1:8080/v1#qwen2.5), "
    "local:smollm2 (the embedded offline model), "
    "scripted:echo (echoes your messages; for demos and tests)"
)
ECHO_FALLBACK_SOURCE: Final = "built-in fallback: nothing configured"
ECHO_CHOSEN_NOTE: Final = "It echoes your messages: for demos and tests."
ECHO_NOTICE: Final = (
    "No model is configured, so this one only echoes your messages. Set OPENAI_API_KEY or "
    "ANTHROPIC_API_KEY, start a local OpenAI-compatible server (e.g. Ollama), run "
    "scripts/setup.sh for the offline model, or pass --model."
)


@dataclass(frozen=True)
class ModelSpec:
    """A model to offer: what kind, which model, where, and where the choice came from."""

    kind: ModelKind
    model: str
    base_url: str | None
    source: str

    @property
    def name(self) -> str:
        """The registry name; `parse_model(spec.name)` gives the same kind, model, base_url
        (but for a password in the URL: the name shows ``***`` instead, see `shown_url`)."""
        if self.kind == "openai-compatible":
            return f"openai-compatible:{shown_url(self.base_url or '')}#{self.model}"
        return f"{self.kind}:{self.model}"

    def __repr__(self) -> str:
        where = None if self.base_url is None else shown_url(self.base_url)
        return (
            f"ModelSpec(kind={self.kind!r}, model={self.model!r}, base_url={where!r}, "
            f"source={self.source!r})"
        )


@dataclass(frozen=True)
class ModelInfo:
    """One registered model as the UI lists it. Holds no secret."""

    name: str
    spec: ModelSpec
    is_default: bool
    note: str


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


def _loggable(text: object) -> str:
    """`text` fit for one log line: as it is when every character in it is printable, else
    with each that is not (a newline, an escape sequence's ESC, a line separator) written
    as its escape (``\\n``, ``\\x1b``, ``\\u2028``). Model names come from a local
    server's listing, the environment or a config file: one holding a newline must not
    start a log line of its own, nor one holding a terminal escape rewrite the screen."""
    shown = str(text)
    if shown.isprintable():
        return shown
    return "".join(
        char if char.isprintable() else char.encode("unicode_escape").decode("ascii")
        for char in shown
    )


def parse_model(text: str, *, source: str) -> ModelSpec:
    """A `--model` string as a spec; ConfigError listing the accepted forms when it is none.

    Spaces around the parts and the case of the kind do not matter (``OpenAI: gpt-4o``).
    The URL of ``openai-compatible:URL#MODEL`` must be an http(s) URL with a host (and a
    valid port); one that ends in the endpoint (``/chat/completions``) instead of the base
    URL is refused, saying which base URL to give, and so is one without ``http://``
    (``localhost:11434/v1``), saying so.
    """
    kind, sep, rest = text.strip().partition(":")
    kind, rest = kind.strip().lower(), rest.strip()
    if not sep or kind not in get_args(ModelKind) or not rest:
        raise ConfigError(f"unknown model {text!r} (from {source}); use one of: {MODEL_FORMS}")
    if kind == "openai-compatible":
        url, hash_sign, model = rest.rpartition("#")
        url = url.strip().rstrip("/")
        if not hash_sign or not model.strip() or not url:
            raise ConfigError(
                f"model {text!r} (from {source}) needs a URL and a model name: "
                "openai-compatible:http://HOST:PORT/v1#MODEL"
            )
        _check_base_url(url, text=text, source=source)
        return ModelSpec("openai-compatible", model.strip(), url, source)
    if kind == "local" and rest != "smollm2":
        raise ConfigError(f"unknown local model {text!r} (from {source}); use local:smollm2")
    if kind == "scripted" and rest != "echo":
        raise ConfigError(f"unknown scripted model {text!r} (from {source}); use scripted:echo")
    return ModelSpec(cast(ModelKind, kind), rest, None, source)


_URL_SCHEMES: Final = ("http://", "https://")
_ENDPOINT_SUFFIXES: Final = ("/chat/completions", "/completions")
"""Paths the client adds to a base URL: a URL ending in one is an endpoint, not a base."""


def _check_base_url(url: str, *, text: str, source: str) -> None:
    """ConfigError when `url` cannot be an OpenAI-compatible server's base URL."""
    problem = _base_url_problem(url)
    if problem:
        raise ConfigError(
            f"model {text!r} (from {source}): the URL {url!r} cannot be a server's base URL: "
            f"{problem} (e.g. openai-compatible:http://127.0.0.1:8080/v1#MODEL)"
        )


def _base_url_problem(url: str) -> str:
    """Why `url` cannot be a base URL ("" when it can)."""
    if "://" in url and not url.lower().startswith(_URL_SCHEMES):
        return "only http:// and https:// URLs are served"
    if not url.lower().startswith(_URL_SCHEMES):  # localhost:11434/v1
        return f"it does not start with http:// or https:// (e.g. http://{url})"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError as error:
        return f"it is not a valid URL ({error})"
    if not parts.hostname:
        return "it names no host"
    if any(c.isspace() for c in url):
        return "it contains a space"
    if parts.path.lower().endswith(_ENDPOINT_SUFFIXES):
        suffix = next(s for s in _ENDPOINT_SUFFIXES if parts.path.lower().endswith(s))
        base = url[: len(url) - len(suffix)]
        return (
            f"it ends in the endpoint {suffix}, which the client adds itself; "
            f"give the base URL {base}"
        )
    return ""


def read_environment(
    env: Mapping[str, str] | None = None, dotenv_path: Path | None = Path(".env")
) -> tuple[dict[str, str], set[str]]:
    """`(variables, names that came from .env)`: `env` (default os.environ) over the file."""
    real = dict(os.environ if env is None else env)
    from_file: dict[str, str] = {}
    if dotenv_path is not None and dotenv_path.is_file():
        from dotenv import dotenv_values

        from_file = {k: v for k, v in dotenv_values(dotenv_path).items() if v is not None}
    merged = {**from_file, **real}
    return merged, {name for name in from_file if name not in real}


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
            logger.info("%s is still loading its model; offering it all the same", _loggable(base))
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
            _loggable(server.label),
            _loggable(base),
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


class ModelRegistry:
    """The models one server offers. The first registered is the default unless set.

    `timeout_s`: how long the servers of the vendor and compatible models may stay silent
    (None: `DEFAULT_TIMEOUT_S`); `timeout_setting`: what set it, named when it fires.
    """

    def __init__(
        self,
        *,
        secrets: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        timeout_setting: str = "",
    ) -> None:
        self._specs: dict[str, ModelSpec] = {}
        self._providers: dict[str, LLMProvider] = {}
        self._secrets = dict(secrets or {})
        self._default: str | None = None
        self._timeout_s = DEFAULT_TIMEOUT_S if timeout_s is None else timeout_s
        self._timeout_setting = timeout_setting

    def __repr__(self) -> str:
        return f"ModelRegistry(default={self._default!r}, names={self.names()!r})"

    @property
    def default(self) -> str:
        if self._default is None:
            raise ConfigError("no model is registered")
        return self._default

    def set_default(self, name: str) -> None:
        self.spec(name)
        self._default = name

    def names(self) -> list[str]:
        return list(self._specs)

    def spec(self, name: str) -> ModelSpec:
        try:
            return self._specs[name]
        except KeyError:
            known = ", ".join(self._specs) or "none"
            raise ConfigError(f"unknown model {name!r}; registered: {known}") from None

    def add(self, spec: ModelSpec) -> str:
        """Register `spec` and return its name. A name already registered keeps its first
        spec. ConfigError when the spec cannot work (a missing key, no local model)."""
        self._check_usable(spec)
        name = spec.name
        if name in self._specs:
            logger.debug(
                "model %s already registered from %s",
                _loggable(name),
                _loggable(self._specs[name].source),
            )
            return name
        self._specs[name] = spec
        if self._default is None:
            self._default = name
        return name

    def _check_usable(self, spec: ModelSpec) -> None:
        if spec.kind == "openai" and not self._secrets.get("OPENAI_API_KEY"):
            raise ConfigError(
                f"{spec.name} (from {spec.source}) needs OPENAI_API_KEY in the environment or "
                "a .env file; for a server without a key use openai-compatible:URL#MODEL"
            )
        if spec.kind == "anthropic" and not self._secrets.get("ANTHROPIC_API_KEY"):
            raise ConfigError(
                f"{spec.name} (from {spec.source}) needs ANTHROPIC_API_KEY in the environment "
                "or a .env file"
            )
        if spec.kind == "local" and not local_model_available():
            raise ConfigError(f"{spec.name} (from {spec.source}): {SETUP_HINT}")

    def describe(self) -> list[ModelInfo]:
        """Every model with why it is offered; the default's note says why it is default."""
        infos = []
        for name, spec in self._specs.items():
            is_default = name == self._default
            notes = [f"default: {spec.source}" if is_default else f"from {spec.source}"]
            if spec.kind in _BASE_URL_VARIABLES and spec.base_url:  # not the vendor's own API
                notes.append(f"Requests go to {shown_url(spec.base_url)}")
            if spec.kind == "local":
                notes.append(LOCAL_MODEL_NOTICE)
            elif spec.kind == "scripted":  # asked for, or the fallback for nothing at all
                fallback = spec.source == ECHO_FALLBACK_SOURCE
                notes.append(ECHO_NOTICE if fallback else ECHO_CHOSEN_NOTE)
            infos.append(ModelInfo(name, spec, is_default, ". ".join(notes)))
        return infos

    def get(self, name: str | None = None) -> LLMProvider:
        """The provider for `name` (default: the default model), built once and cached."""
        name = self.default if name is None else name
        spec = self.spec(name)
        provider = self._providers.get(name)
        if provider is None:
            provider = self._build(spec)
            self._providers[name] = provider
            logger.info("model %s ready (from %s)", _loggable(name), _loggable(spec.source))
        return provider

    def token_counter(self, name: str | None = None) -> TokenCounter:
        """The local model's own tokenizer for it; tiktoken (or an estimate) for the rest."""
        name = self.default if name is None else name
        spec = self.spec(name)
        if spec.kind == "local":
            provider = self.get(name)
            assert isinstance(provider, LlamaLocalProvider)
            return provider.token_counter()
        from gui_agent.tokens import counter_for_model

        return counter_for_model(spec.model)

    def _build(self, spec: ModelSpec) -> LLMProvider:
        if spec.kind == "openai":
            from connectors.openai import OpenAIProvider

            key = self._secrets.get("OPENAI_API_KEY")
            return OpenAIProvider(
                spec.model,
                api_key=key,
                base_url=spec.base_url,
                timeout_s=self._timeout_s,
                timeout_setting=self._timeout_setting,
            )
        if spec.kind == "openai-compatible":
            from connectors.openai import OpenAIProvider

            key = self._secrets.get(COMPATIBLE_KEY_ENV) or LOCAL_SERVER_KEY
            return OpenAIProvider(
                spec.model,
                api_key=key,
                base_url=spec.base_url,
                name_prefix="openai-compatible",
                key_env=COMPATIBLE_KEY_ENV,  # a refused key says which variable to set
                timeout_s=self._timeout_s,
                timeout_setting=self._timeout_setting,
            )
        if spec.kind == "anthropic":
            from connectors.anthropic import AnthropicProvider

            key = self._secrets.get("ANTHROPIC_API_KEY")
            return AnthropicProvider(
                spec.model,
                api_key=key,
                base_url=spec.base_url,
                timeout_s=self._timeout_s,
                timeout_setting=self._timeout_setting,
            )
        if spec.kind == "local":
            return LlamaLocalProvider()
        from connectors.scripted import EchoModel

        return EchoModel(name=spec.name)


_SECRET_NAMES: Final = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", COMPATIBLE_KEY_ENV)
_BASE_URL_VARIABLES: Final[Mapping[str, str]] = MappingProxyType(
    {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
)
"""Where a vendor's requests go when its base URL is set (also from a `.env` file, which the
vendor SDKs do not read): for an `openai:` or `anthropic:` model named explicitly as much as
for the one its key alone configures."""


def _from_env(variables: Mapping[str, str], from_file: set[str]) -> list[ModelSpec]:
    def where(var: str) -> str:
        return f"{var} in .env file" if var in from_file else f"{var} in environment"

    specs = []
    if variables.get("OPENAI_API_KEY"):
        model = variables.get("OPENAI_MODEL") or DEFAULT_OPENAI_MODEL
        base_url = variables.get("OPENAI_BASE_URL") or None
        specs.append(ModelSpec("openai", model, base_url, where("OPENAI_API_KEY")))
    if variables.get("ANTHROPIC_API_KEY"):
        model = variables.get("ANTHROPIC_MODEL") or DEFAULT_ANTHROPIC_MODEL
        base_url = variables.get("ANTHROPIC_BASE_URL") or None
        specs.append(ModelSpec("anthropic", model, base_url, where("ANTHROPIC_API_KEY")))
    return specs


def _timeout_from(variables: Mapping[str, str], from_file: set[str]) -> float | None:
    """`MODEL_TIMEOUT_ENV` in seconds (None when unset or empty); ConfigError when it is no
    positive, finite number."""
    text = variables.get(MODEL_TIMEOUT_ENV, "").strip()
    if not text:
        return None
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not (math.isfinite(seconds) and seconds > 0):
        where = "the .env file" if MODEL_TIMEOUT_ENV in from_file else "the environment"
        raise ConfigError(
            f"{MODEL_TIMEOUT_ENV} (in {where}) must be the seconds a model's server may stay "
            f"silent, a number above 0 such as 120; got {text!r}"
        )
    return seconds


async def resolve_models(
    *,
    explicit: Sequence[str] = (),
    explicit_source: str = "--model flag",
    env: Mapping[str, str] | None = None,
    dotenv_path: Path | None = Path(".env"),
    probe_local: bool = True,
    probe_timeout_s: float = 0.3,
    local_servers: Sequence[LocalServer] = DEFAULT_LOCAL_SERVERS,
    embedded: bool = True,
    model_timeout_s: float | None = None,
) -> ModelRegistry:
    """Find every usable model (see the module docstring for the order) and register them.

    An explicit model that cannot work (bad form, missing key) raises ConfigError: the
    person asked for it. `embedded=False` leaves the offline model out (tests, servers
    that should not load it). `model_timeout_s`, when given, wins over
    `MODEL_TIMEOUT_ENV`; a value of that variable that is no positive number of seconds
    raises ConfigError naming it.
    """
    variables, from_file = read_environment(env, dotenv_path)
    setting = ""
    if model_timeout_s is None:
        model_timeout_s = _timeout_from(variables, from_file)
        setting = MODEL_TIMEOUT_ENV
    registry = ModelRegistry(
        secrets={k: variables[k] for k in _SECRET_NAMES if k in variables},
        timeout_s=model_timeout_s,
        timeout_setting=setting,
    )
    for text in explicit:
        spec = parse_model(text, source=explicit_source)
        base_variable = _BASE_URL_VARIABLES.get(spec.kind, "")
        if variables.get(base_variable):  # as for a model the key alone configures
            spec = replace(spec, base_url=variables[base_variable])
        registry.add(spec)
    candidates = _from_env(variables, from_file)
    if probe_local:
        candidates += await probe_local_servers(local_servers, timeout_s=probe_timeout_s)
    if embedded and local_model_available():
        candidates.append(ModelSpec("local", "smollm2", None, "built-in offline default"))
    for spec in candidates:
        registry.add(spec)
    if not registry.names():
        registry.add(ModelSpec("scripted", "echo", None, ECHO_FALLBACK_SOURCE))
        logger.warning("no model configured; using the echo model. %s", ECHO_NOTICE)
    for info in registry.describe():
        logger.info(
            "model %s%s (%s)",
            _loggable(info.name),
            " [default]" if info.is_default else "",
            _loggable(info.spec.source),
        )
    return registry
