"""Which models a server offers, where each came from, and which one is the default.

Precedence (every source found is registered; the first is the default):

1. models named explicitly (`--model` flags or the config file), in the order given;
2. `OPENAI_API_KEY` (with `OPENAI_BASE_URL`, model from `OPENAI_MODEL` or gpt-4o-mini);
3. `ANTHROPIC_API_KEY` (with `ANTHROPIC_BASE_URL`, model from `ANTHROPIC_MODEL` or
   `DEFAULT_ANTHROPIC_MODEL`); a base URL variable that cannot be a base URL leaves its
   model out, saying why (`ModelRegistry.left_out`), and refuses an explicit one;
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

What a person configures (`ModelSpec`, `parse_model`, the environment) is read by
`connectors.model_config`, the local servers are probed by `connectors.local_servers`; both
are importable from here too. Model names and sources are logged escaped
(`connectors.log_text.loggable`): a name with a newline cannot forge a log line.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Final

from connectors.base import DEFAULT_TIMEOUT_S, MODEL_TIMEOUT_ENV, shown_url
from connectors.llama_local import (
    LOCAL_MODEL_NOTICE,
    SETUP_HINT,
    LlamaLocalProvider,
    local_model_available,
)
from connectors.local_servers import (
    DEFAULT_LOCAL_SERVERS,
    LOADING_MODEL_NAME,
    LocalServer,
    probe_local_servers,
)
from connectors.log_text import loggable
from connectors.model_config import (
    BASE_URL_VARIABLES,
    DEFAULT_ANTHROPIC_MODEL,
    DEFAULT_OPENAI_MODEL,
    MODEL_FORMS,
    ModelKind,
    ModelSpec,
    base_url_from_environment,
    parse_model,
    read_environment,
    specs_from_environment,
    timeout_from_environment,
)
from gui_agent.exceptions import ConfigError
from gui_agent.llm import LLMProvider

if TYPE_CHECKING:
    from gui_agent.tokens import TokenCounter

__all__ = [
    "COMPATIBLE_KEY_ENV",
    "DEFAULT_ANTHROPIC_MODEL",
    "DEFAULT_LOCAL_SERVERS",
    "DEFAULT_OPENAI_MODEL",
    "ECHO_NOTICE",
    "LOADING_MODEL_NAME",
    "LOCAL_SERVER_KEY",
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

COMPATIBLE_KEY_ENV: Final = "OPENAI_COMPATIBLE_API_KEY"
"""The key sent to OpenAI-compatible servers (OpenRouter, Groq, Together, a local server
behind a key); without it they get `LOCAL_SERVER_KEY`."""
LOCAL_SERVER_KEY: Final = "no-key-needed"
"""Sent to OpenAI-compatible servers: never the OpenAI key (that would leak it to them)."""
_SECRET_NAMES: Final = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", COMPATIBLE_KEY_ENV)

ECHO_FALLBACK_SOURCE: Final = "built-in fallback: nothing configured"
ECHO_CHOSEN_NOTE: Final = "It echoes your messages: for demos and tests."
ECHO_NOTICE: Final = (
    "No model is configured, so this one only echoes your messages. Set OPENAI_API_KEY or "
    "ANTHROPIC_API_KEY, start a local OpenAI-compatible server (e.g. Ollama), run "
    "scripts/setup.sh for the offline model, or pass --model."
)


@dataclass(frozen=True)
class ModelInfo:
    """One registered model as the UI lists it. Holds no secret."""

    name: str
    spec: ModelSpec
    is_default: bool
    note: str


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
        self.left_out: tuple[str, ...] = ()
        """Why models the environment configures are not offered (`resolve_models`)."""

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
                loggable(name),
                loggable(self._specs[name].source),
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
            if spec.kind in BASE_URL_VARIABLES and spec.base_url:  # not the vendor's own API
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
            logger.info("model %s ready (from %s)", loggable(name), loggable(spec.source))
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
    announce: bool = True,
) -> ModelRegistry:
    """Find every usable model (see the module docstring for the order) and register them.

    An explicit model that cannot work (bad form, missing key, a base URL variable that
    cannot be a base URL) raises ConfigError: the person asked for it. A model a key
    configures whose base URL variable cannot be one is left out instead, saying why in a
    warning and in `ModelRegistry.left_out`: the rest (the offline model too) still
    start, and its requests would all have failed. `embedded=False` leaves the offline
    model out (tests, servers that should not load it). `model_timeout_s`, when given, wins
    over `MODEL_TIMEOUT_ENV`; a value of that variable that is no positive number of
    seconds raises ConfigError naming it. `announce=False` logs no line per model and no
    warning per model left out (`gui-agent models` prints them itself: its log said each a
    second time).
    """
    variables, from_file = read_environment(env, dotenv_path)
    setting = ""
    if model_timeout_s is None:
        model_timeout_s = timeout_from_environment(variables, from_file)
        setting = MODEL_TIMEOUT_ENV
    registry = ModelRegistry(
        secrets={k: variables[k] for k in _SECRET_NAMES if k in variables},
        timeout_s=model_timeout_s,
        timeout_setting=setting,
    )
    for text in explicit:
        spec = parse_model(text, source=explicit_source)
        try:  # as for a model the key alone configures
            base_url = base_url_from_environment(spec.kind, variables, from_file)
        except ConfigError as error:  # asked for by name: it has to work
            raise ConfigError(f"{spec.name} (from {spec.source}): {error}") from None
        registry.add(replace(spec, base_url=base_url or spec.base_url))
    candidates, left_out = specs_from_environment(variables, from_file)
    registry.left_out = tuple(left_out)
    for why in left_out if announce else ():
        logger.warning("%s", loggable(why))
    if probe_local:
        candidates += await probe_local_servers(local_servers, timeout_s=probe_timeout_s)
    if embedded and local_model_available():
        candidates.append(ModelSpec("local", "smollm2", None, "built-in offline default"))
    for spec in candidates:
        registry.add(spec)
    if not registry.names():
        registry.add(ModelSpec("scripted", "echo", None, ECHO_FALLBACK_SOURCE))
        logger.warning("no model configured; using the echo model. %s", ECHO_NOTICE)
    for info in registry.describe() if announce else ():
        logger.info(
            "model %s%s (%s)",
            loggable(info.name),
            " [default]" if info.is_default else "",
            loggable(info.spec.source),
        )
    return registry
