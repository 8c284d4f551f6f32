"""Each package's public surface is exactly its `__all__`, and every name in it exists."""

from __future__ import annotations

import importlib
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
    for module in ("openai", "anthropic", "llama_cpp"):
        sys.modules.pop(module, None)
    package = importlib.reload(importlib.import_module(name))
    assert "openai" not in sys.modules and "anthropic" not in sys.modules
    for member in package.__all__:
        assert getattr(package, member) is not None
