"""The models a person configures: `--model` strings and what the environment names.

A `ModelSpec` says what kind of model, which one, where its server is and where the choice
came from. `parse_model` reads one from a ``KIND:MODEL`` string (a `--model` flag, the config
file, ``GUI_AGENT_MODEL``), refusing, with the accepted forms, what cannot work; the
environment (the process environment overlaid on a `.env` file, `read_environment`) names
the vendor models its keys configure (`specs_from_environment`), where their requests go
(`base_url_from_environment`: refused, as for ``openai-compatible:``, when it cannot be a
base URL) and how long a model's server may stay silent (`timeout_from_environment`). Which
of them a server offers, and which is the default, is `connectors.registry`'s business.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from types import MappingProxyType
from typing import Final, Literal, cast, get_args
from urllib.parse import urlsplit

from connectors.base import MODEL_TIMEOUT_ENV, shown_url
from gui_agent.exceptions import ConfigError

__all__ = [
    "BASE_URL_VARIABLES",
    "DEFAULT_ANTHROPIC_MODEL",
    "DEFAULT_OPENAI_MODEL",
    "MODEL_FORMS",
    "ModelKind",
    "ModelSpec",
    "base_url_from_environment",
    "parse_model",
    "read_environment",
    "specs_from_environment",
    "timeout_from_environment",
]

ModelKind = Literal["openai", "anthropic", "openai-compatible", "local", "scripted"]

DEFAULT_OPENAI_MODEL: Final = "gpt-4o-mini"
DEFAULT_ANTHROPIC_MODEL: Final = "claude-sonnet-4-5"

MODEL_FORMS: Final = (
    "openai:MODEL (e.g. openai:gpt-4o-mini), "
    "anthropic:MODEL (e.g. anthropic:claude-sonnet-4-5), "
    "openai-compatible:URL#MODEL (e.g. openai-compatible:http://127.0.0.1:8080/v1#qwen2.5), "
    "local:smollm2 (the embedded offline model), "
    "scripted:echo (echoes your messages; for demos and tests)"
)

_COMPATIBLE_FORM: Final = "openai-compatible:http://HOST:PORT/v1#MODEL"
_COMPATIBLE_EXAMPLE: Final = "openai-compatible:http://127.0.0.1:8080/v1#MODEL"
_KIND_FORMS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "openai": f"openai:MODEL (e.g. openai:{DEFAULT_OPENAI_MODEL})",
        "anthropic": f"anthropic:MODEL (e.g. anthropic:{DEFAULT_ANTHROPIC_MODEL})",
        "local": "local:smollm2",
        "scripted": "scripted:echo",
    }
)
"""What to write after each kind named with nothing after it (``openai:``): a known kind
is not an unknown model, it lacks the model's name."""


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
    if not sep or kind not in get_args(ModelKind):
        raise ConfigError(f"unknown model {text!r} (from {source}); use one of: {MODEL_FORMS}")
    if not rest and kind in _KIND_FORMS:  # (`openai-compatible:` says so below)
        raise ConfigError(f"model {text!r} (from {source}) needs a model name: {_KIND_FORMS[kind]}")
    if kind == "openai-compatible":
        url, hash_sign, model = rest.rpartition("#")
        url = url.strip().rstrip("/")
        if not hash_sign or not model.strip() or not url:
            raise ConfigError(
                f"model {text!r} (from {source}) needs a URL and a model name: {_COMPATIBLE_FORM}"
            )
        _check_base_url(url, text=text, source=source)
        return ModelSpec("openai-compatible", model.strip(), url, source)
    if kind == "local" and rest != "smollm2":
        raise ConfigError(f"unknown local model {text!r} (from {source}); use local:smollm2")
    if kind == "scripted" and rest != "echo":
        raise ConfigError(f"unknown scripted model {text!r} (from {source}); use scripted:echo")
    return ModelSpec(cast(ModelKind, kind), rest, None, source)


_URL_SCHEMES: Final = ("http://", "https://")
_ENDPOINT_SUFFIXES: Final[Mapping[str, tuple[str, ...]]] = MappingProxyType(
    {
        "openai": ("/chat/completions", "/completions"),
        "openai-compatible": ("/chat/completions", "/completions"),
        "anthropic": ("/v1/messages",),
    }
)
"""Paths each kind's client adds to a base URL: a URL ending in one is an endpoint, not a
base (the Anthropic client adds ``/v1/messages``, so its base ends before ``/v1``)."""


def _check_base_url(url: str, *, text: str, source: str) -> None:
    """ConfigError when `url` cannot be an OpenAI-compatible server's base URL: why, and
    what to write instead (the URL the why names when it names one, else the form: two
    examples one after the other read as a stutter)."""
    problem, fixed = _base_url_problem(url, "openai-compatible")
    if problem:
        instead = "" if fixed else f" (e.g. {_COMPATIBLE_EXAMPLE})"
        raise ConfigError(
            f"model {text!r} (from {source}): the URL {_shown(url)!r} cannot be a server's "
            f"base URL: {problem}{instead}"
        )


def _shown(url: str) -> str:
    """`url` as `shown_url` shows it, also without ``http://`` (``user:secret@host/v1``)."""
    return shown_url(url) if "://" in url else shown_url(f"//{url}").removeprefix("//")


def _base_url_problem(url: str, kind: str) -> tuple[str, str]:
    """Why `url` cannot be the base URL of a `kind` model ("" when it can), and the URL to
    give instead when there is one to say (also said in the why). A password in `url` is
    shown as ``***`` in both."""
    if "://" in url and not url.lower().startswith(_URL_SCHEMES):
        return "only http:// and https:// URLs are served", ""
    if not url.lower().startswith(_URL_SCHEMES):  # localhost:11434/v1
        fixed = shown_url(f"http://{url}")
        return f"it does not start with http:// or https:// (e.g. {fixed})", fixed
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError as error:
        return f"it is not a valid URL ({error})", ""
    if not parts.hostname:
        return "it names no host", ""
    if any(c.isspace() for c in url):
        return "it contains a space", ""
    path = parts.path.lower()
    suffix = next((s for s in _ENDPOINT_SUFFIXES.get(kind, ()) if path.endswith(s)), "")
    if suffix:
        fixed = shown_url(url[: len(url) - len(suffix)])
        return (
            f"it ends in the endpoint {suffix}, which the client adds itself; "
            f"give the base URL {fixed}"
        ), fixed
    return "", ""


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


BASE_URL_VARIABLES: Final[Mapping[str, str]] = MappingProxyType(
    {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
)
"""Where a vendor's requests go when its base URL is set (also from a `.env` file, which the
vendor SDKs do not read): for an `openai:` or `anthropic:` model named explicitly as much as
for the one its key alone configures."""


_BASE_URL_EXAMPLES: Final[Mapping[str, str]] = MappingProxyType(
    {"openai": "http://127.0.0.1:8080/v1", "anthropic": "https://gateway.example.com"}
)
"""What a base URL looks like, for an error that has no better one to suggest."""


def base_url_from_environment(
    kind: str, variables: Mapping[str, str], from_file: set[str]
) -> str | None:
    """Where the environment sends a `kind` model's requests: its `BASE_URL_VARIABLES`
    value, trimmed of spaces (a quoted value in a `.env` file keeps them) and of a final
    ``/``; None when unset, empty, or `kind` has no such variable. ConfigError naming the
    variable, where it was set and what to write when it cannot be a base URL: refused, as
    `parse_model` refuses ``openai-compatible:`` URLs, since every request would fail."""
    variable = BASE_URL_VARIABLES.get(kind)
    if variable is None:
        return None
    url = variables.get(variable, "").strip().rstrip("/")
    if not url:
        return None
    problem, fixed = _base_url_problem(url, kind)  # the why says `fixed` when there is one
    if problem:
        where = "the .env file" if variable in from_file else "the environment"
        instead = "" if fixed else f" (write it as {variable}={_BASE_URL_EXAMPLES[kind]})"
        raise ConfigError(
            f"{variable} (in {where}) is {_shown(url)!r}, which cannot be a server's base "
            f"URL: {problem}{instead}"
        )
    return url


def specs_from_environment(
    variables: Mapping[str, str], from_file: set[str]
) -> tuple[list[ModelSpec], list[str]]:
    """The vendor models the keys in `variables` configure: OpenAI's, then Anthropic's,
    each with its model and base URL variables, and its source naming where its key was
    (`from_file`: the names that came from the `.env` file); and why each model left out
    was left out: one whose base URL variable cannot be a base URL
    (`base_url_from_environment`) is not offered, while the rest still are."""

    def where(var: str) -> str:
        return f"{var} in .env file" if var in from_file else f"{var} in environment"

    specs, left_out = [], []
    for kind, key, model_variable, default in (
        ("openai", "OPENAI_API_KEY", "OPENAI_MODEL", DEFAULT_OPENAI_MODEL),
        ("anthropic", "ANTHROPIC_API_KEY", "ANTHROPIC_MODEL", DEFAULT_ANTHROPIC_MODEL),
    ):
        if not variables.get(key):
            continue
        model = variables.get(model_variable) or default
        spec = ModelSpec(cast(ModelKind, kind), model, None, where(key))
        try:
            base_url = base_url_from_environment(kind, variables, from_file)
        except ConfigError as error:
            left_out.append(f"{spec.name} (from {spec.source}) is not offered: {error}")
            continue
        specs.append(replace(spec, base_url=base_url))
    return specs, left_out


def timeout_from_environment(variables: Mapping[str, str], from_file: set[str]) -> float | None:
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
