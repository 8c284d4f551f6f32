"""Your own agent, named on the command line: `gui-agent serve --agent mypkg.bot:agent`.

`SPEC` is `MODULE:NAME` (a module importable from the current folder or the Python path,
`mypkg.bot:agent`) or `FILE.py:NAME` (`./bot.py:agent`). NAME may be dotted
(`bot:factory.agent`). What it names becomes the agent role `OTHER` ("Other"), offered
beside the built-in roles and picked for new chats:

- an agent role itself (an object with `name`, `description` and `run`, see
  `gui_agent.agents.Architecture`), used as it is;
- anything `ExternalInterpreterAgent` takes: an object with an Open-Interpreter-style
  `chat_core(...)`, or a callable given the conversation (LMC messages) that returns or
  streams chunks (a generator, an async generator, a coroutine, a string, a list).

Importing runs the module's code with the server's rights: name only code you trust. A spec
that cannot be loaded is a ConfigError saying what was wrong, before anything is served.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import cast

from connectors.external import ExternalInterpreterAgent
from gui_agent.agents import Architecture
from gui_agent.exceptions import ConfigError, UserError

__all__ = ["load_agent"]

_FORM = "give it as MODULE:NAME (mypkg.bot:agent) or FILE.py:NAME (./bot.py:agent)"


def load_agent(spec: str, *, folder: Path | None = None) -> Architecture:
    """The agent role `spec` names; `folder` (the current one by default) is where a
    relative FILE.py is found and a MODULE is looked for first."""
    where, sep, name = spec.strip().rpartition(":")
    if not sep or not where or not name:
        raise ConfigError(f"--agent {spec!r}: {_FORM}")
    base = folder or Path.cwd()
    module = _module_from_file(where, base) if where.endswith(".py") else _module(where, base)
    target: object = module
    for part in name.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ConfigError(f"--agent {spec!r}: {where} has no {name!r}") from None
    if _is_role(target):
        return cast("Architecture", target)
    try:
        return ExternalInterpreterAgent(target)
    except UserError as exc:
        raise ConfigError(f"--agent {spec!r}: {exc}") from None


def _is_role(target: object) -> bool:
    return all(hasattr(target, part) for part in ("name", "description", "run")) and callable(
        getattr(target, "run", None)
    )


def _module(dotted: str, base: Path) -> ModuleType:
    folder = str(base)
    if folder not in sys.path:  # (as `python -m` finds it; kept for the module's own imports)
        sys.path.insert(0, folder)
    try:
        return importlib.import_module(dotted)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if dotted == missing or dotted.startswith(missing + "."):  # (not one it imports)
            raise ConfigError(
                f"--agent: no module {dotted!r} in {folder} or on the Python path; {_FORM}"
            ) from None
        raise ConfigError(f"--agent: importing {dotted!r} failed: {exc}") from exc
    except Exception as exc:  # the module's own code failed
        raise ConfigError(
            f"--agent: importing {dotted!r} failed: {type(exc).__name__}: {exc}"
        ) from exc


def _module_from_file(file: str, base: Path) -> ModuleType:
    path = (base / file).resolve()
    if not path.is_file():
        raise ConfigError(f"--agent: no file {file!r} (looked at {path})")
    name = f"gui_agent_plugged_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ConfigError(f"--agent: {path} cannot be imported as Python")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # (dataclasses and pickling look a module up by its name)
    folder = str(path.parent)
    if folder not in sys.path:  # its neighbours import as a script's do
        sys.path.insert(0, folder)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        del sys.modules[name]
        raise ConfigError(f"--agent: running {path} failed: {type(exc).__name__}: {exc}") from exc
    return module
