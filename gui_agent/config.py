"""Application settings: defaults, then a TOML file, then `GUI_AGENT_*` variables, then flags.

    port = 7860                      # config.toml: keys are AppConfig's field names
    models = ["openai:gpt-4o-mini", "local:smollm2"]
    data_dir = "~/.local/share/gui-agent"

    GUI_AGENT_PORT=8000 GUI_AGENT_MODEL=openai:gpt-4o,local:smollm2 gui-agent
    GUI_AGENT_ALLOWED_HOSTS=chat.example.com,*.example.com    # comma-separated lists

The CLI merges its flags last with `AppConfig.with_overrides(...)`. Every value is checked
when an `AppConfig` is built, so a bad one fails at startup with a `ConfigError` naming the
key (and, when it came from the environment, the variable). Nothing here reads a secret:
API keys stay in the environment for the model registry; `auth_file` is only a path.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Final

from gui_agent.auth.hosts import host_pattern
from gui_agent.exceptions import ConfigError

__all__ = [
    "ENV_PREFIX",
    "LOG_LEVELS",
    "MAX_TOKEN_HOURS",
    "AppConfig",
    "load_config",
    "load_config_with_sources",
]

ENV_PREFIX: Final = "GUI_AGENT_"
CONFIG_ENV: Final = "GUI_AGENT_CONFIG"
"""Names the TOML file when `load_config` is given no path."""
LOG_LEVELS: Final = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
MAX_TOKEN_HOURS: Final = 30 * 24
"""The longest an API login may last (`token_hours`): thirty days."""
_HEADER_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off", ""})


@dataclass(frozen=True)
class AppConfig:
    """Everything the server needs to start. Values are validated and normalised on creation."""

    host: str = "127.0.0.1"
    port: int = 7860
    root_path: str = ""
    share: bool = False
    models: tuple[str, ...] = ()
    data_dir: Path | None = None
    auth_file: Path | None = None
    insecure_no_auth: bool = False
    trusted_proxy_header: str | None = None
    retention_days: int | None = None
    token_hours: int = 12
    """How long a login to the API lasts (its token), in hours: 1 to `MAX_TOKEN_HOURS`. The
    Gradio page's own login is Gradio's."""
    log_level: str = "INFO"
    workspace_root: Path | None = None
    allowed_hosts: tuple[str, ...] = ()
    """Host names (or `*.example.com`) served besides loopback ones. Enforced with a proxy's
    user header or a users file; without login only loopback names are ever served."""

    def __post_init__(self) -> None:
        for spec in fields(self):
            value = getattr(self, spec.name)
            checked = _CHECKS[spec.name](value)
            if checked is not value:
                object.__setattr__(self, spec.name, checked)

    def with_overrides(self, **overrides: Any) -> AppConfig:
        """A copy with the given values replaced; None means "not given" and is ignored."""
        unknown = set(overrides) - _FIELD_NAMES
        if unknown:
            raise ConfigError(f"unknown setting(s): {', '.join(sorted(unknown))}")
        given = {key: value for key, value in overrides.items() if value is not None}
        if not given:
            return self
        return _build(lambda: dataclasses.replace(self, **given), dict.fromkeys(given, "flag"))


def _build(make: Callable[[], AppConfig], source: Mapping[str, str]) -> AppConfig:
    """Build, turning an error about a key into one that says where the bad value came from."""
    try:
        return make()
    except _BadValue as exc:
        origin = source.get(exc.key)
        where = f" (from {origin})" if origin else ""
        raise ConfigError(f"{exc.key}{where}: {exc.problem}") from None


class _BadValue(ConfigError):
    def __init__(self, key: str, problem: str) -> None:
        super().__init__(f"{key}: {problem}")
        self.key = key
        self.problem = problem


# --- checks: each takes a typed value and returns it (normalised) or raises _BadValue -----


def _check_host(value: Any) -> str:
    if not isinstance(value, str) or not value.strip() or any(c.isspace() for c in value):
        raise _BadValue("host", f"expected a host name or address, got {value!r}")
    return value.strip()


def _check_port(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 65535:
        raise _BadValue("port", f"expected a port number 0-65535, got {value!r}")
    return value


def _check_root_path(value: Any) -> str:
    if not isinstance(value, str):
        raise _BadValue("root_path", f"expected a URL path such as /chat, got {value!r}")
    path = value.strip().rstrip("/")
    if path and (not path.startswith("/") or "//" in path or any(c.isspace() for c in path)):
        raise _BadValue("root_path", f"expected a URL path such as /chat, got {value!r}")
    return path


def _bool_check(key: str) -> Callable[[Any], bool]:
    def check(value: Any) -> bool:
        if not isinstance(value, bool):
            raise _BadValue(key, f"expected true or false, got {value!r}")
        return value

    return check


def _check_models(value: Any) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(m, str) for m in items):
        raise _BadValue("models", f"expected a list of model names, got {value!r}")
    models = tuple(m.strip() for m in items if m.strip())
    if any(":" not in m for m in models):
        raise _BadValue("models", f"expected names like openai:gpt-4o-mini, got {value!r}")
    return models


def _path_check(key: str) -> Callable[[Any], Path | None]:
    def check(value: Any) -> Path | None:
        if value is None:
            return None
        if isinstance(value, str) and value.strip():
            value = Path(value.strip())
        if not isinstance(value, Path):
            raise _BadValue(key, f"expected a path, got {value!r}")
        return value.expanduser()

    return check


def _check_header(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not _HEADER_NAME.match(value.strip()):
        raise _BadValue("trusted_proxy_header", f"expected an HTTP header name, got {value!r}")
    return value.strip()


def _check_allowed_hosts(value: Any) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)) or not all(isinstance(h, str) for h in items):
        raise _BadValue("allowed_hosts", f"expected a list of host names, got {value!r}")
    try:
        return tuple(dict.fromkeys(host_pattern(h) for h in items if h.strip()))
    except ValueError as exc:
        raise _BadValue("allowed_hosts", str(exc)) from None


def _check_retention(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _BadValue("retention_days", f"expected a whole number of days >= 1, got {value!r}")
    return value


def _check_token_hours(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_TOKEN_HOURS:
        raise _BadValue(
            "token_hours",
            f"expected a whole number of hours, 1 to {MAX_TOKEN_HOURS}, got {value!r}",
        )
    return value


def _check_log_level(value: Any) -> str:
    level = value.strip().upper() if isinstance(value, str) else value
    if level not in LOG_LEVELS:
        raise _BadValue("log_level", f"expected one of {', '.join(LOG_LEVELS)}, got {value!r}")
    return str(level)


_CHECKS: Final[dict[str, Callable[[Any], Any]]] = {
    "host": _check_host,
    "port": _check_port,
    "root_path": _check_root_path,
    "share": _bool_check("share"),
    "models": _check_models,
    "data_dir": _path_check("data_dir"),
    "auth_file": _path_check("auth_file"),
    "insecure_no_auth": _bool_check("insecure_no_auth"),
    "trusted_proxy_header": _check_header,
    "retention_days": _check_retention,
    "token_hours": _check_token_hours,
    "log_level": _check_log_level,
    "workspace_root": _path_check("workspace_root"),
    "allowed_hosts": _check_allowed_hosts,
}
_FIELD_NAMES: Final = frozenset(_CHECKS)


# --- reading strings from the environment -------------------------------------------------


def _env_bool(text: str) -> bool | str:
    lowered = text.strip().lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    return text  # the check reports it


def _env_int(text: str) -> int | str:
    try:
        return int(text.strip())
    except ValueError:
        return text


def _env_optional(text: str) -> str | None:
    return text.strip() or None


def _env_optional_int(text: str) -> int | str | None:
    return _env_int(text) if text.strip() else None


def _env_models(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


_ENV_PARSERS: Final[dict[str, Callable[[str], Any]]] = {
    "host": str,
    "port": _env_int,
    "root_path": str,
    "share": _env_bool,
    "models": _env_models,
    "data_dir": _env_optional,
    "auth_file": _env_optional,
    "insecure_no_auth": _env_bool,
    "trusted_proxy_header": _env_optional,
    "retention_days": _env_optional_int,
    "token_hours": _env_int,
    "log_level": str,
    "workspace_root": _env_optional,
    "allowed_hosts": str,  # comma-separated; the check splits it
}
_ENV_NAMES: Final = {
    key: ENV_PREFIX + ("MODEL" if key == "models" else key.upper()) for key in _CHECKS
}
"""GUI_AGENT_HOST, GUI_AGENT_PORT, GUI_AGENT_MODEL (comma-separated), GUI_AGENT_DATA_DIR, ..."""


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as file:
            data = tomllib.load(file)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"config file {path} is not valid TOML: not UTF-8 text (byte {exc.start})"
        ) from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from None
    if "model" in data and "models" not in data:  # a single model reads naturally too
        data["models"] = data.pop("model")
    unknown = set(data) - _FIELD_NAMES
    if unknown:
        raise ConfigError(
            f"unknown key(s) in {path}: {', '.join(sorted(unknown))}; "
            f"known keys: {', '.join(sorted(_FIELD_NAMES))}"
        )
    return data


def load_config(path: Path | None = None, env: Mapping[str, str] | None = None) -> AppConfig:
    """Defaults < the TOML file at `path` (or `$GUI_AGENT_CONFIG`) < `GUI_AGENT_*` variables.

    `env` defaults to `os.environ`. Empty variables count as unset. ConfigError names the
    key and where its bad value came from.
    """
    return load_config_with_sources(path, env)[0]


def load_config_with_sources(
    path: Path | None = None, env: Mapping[str, str] | None = None
) -> tuple[AppConfig, dict[str, str]]:
    """`load_config`, plus where each value that is not a default came from: the key mapped
    to `config file PATH` or `NAME in environment` (for `gui-agent models` to say why)."""
    env = os.environ if env is None else env
    if path is None and env.get(CONFIG_ENV):
        path = Path(env[CONFIG_ENV]).expanduser()
    values: dict[str, Any] = {}
    source: dict[str, str] = {}
    if path is not None:
        for key, value in _read_toml(path).items():
            values[key] = value
            source[key] = str(path)
    for key, variable in _ENV_NAMES.items():
        text = env.get(variable)
        if text is None or not text.strip():
            continue
        values[key] = _ENV_PARSERS[key](text)
        source[key] = variable
    config = _build(lambda: AppConfig(**values), source)
    where = {
        key: f"{origin} in environment" if origin in env else f"config file {origin}"
        for key, origin in source.items()
    }
    return config, where
