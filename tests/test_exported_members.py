"""Each package's public surface is exactly its `__all__`, and every name in it exists."""

from __future__ import annotations

import importlib
import subprocess
import sys
from types import ModuleType

import pytest

EAGER = ["schema", "gui_agent", "gui_agent.agents", "gui_agent.tools", "gui_agent.store"]
LAZY = ["connectors"]


@pytest.mark.parametrize("name", EAGER)
def test_all_is_exact(name: str) -> None:
    package = importlib.import_module(name)
    exported = set(package.__all__)
    public = {
        member
        for member in dir(package)
        if not member.startswith("_")
        and member != "annotations"
        and not isinstance(getattr(package, member), ModuleType)
    }
    assert exported == public
    assert len(package.__all__) == len(exported), "duplicates in __all__"


@pytest.mark.parametrize("name", LAZY)
def test_lazy_exports_resolve_without_loading_vendor_sdks(name: str) -> None:
    """In a fresh interpreter: dropping a loaded SDK from `sys.modules` here would leave its
    submodules behind, and the next import of it in this process would be half-made."""
    probe = (
        "import importlib, sys\n"
        f"package = importlib.import_module({name!r})\n"
        "assert 'openai' not in sys.modules and 'anthropic' not in sys.modules\n"
        "missing = [m for m in package.__all__ if getattr(package, m) is None]\n"
        "assert not missing, missing\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
