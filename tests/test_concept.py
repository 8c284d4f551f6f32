"""`.concept/` stays true: every mapping names a real symbol, every invariant a real test."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
CONCEPT = ROOT / ".concept"


def load(name: str) -> dict[str, Any]:
    data = yaml.safe_load((CONCEPT / name).read_text())
    assert isinstance(data, dict) and data.get("version") == 1
    return data


def resolve(symbol: str) -> object:
    module_name, _, attribute = symbol.partition(":")
    target: object = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    return target


def test_every_mapping_names_an_existing_symbol() -> None:
    mappings = load("mappings.yml")["mappings"]
    missing = []
    for term, symbols in mappings.items():
        for symbol in symbols:
            try:
                resolve(symbol)
            except (ImportError, AttributeError) as exc:
                missing.append(f"{term}: {symbol} ({exc})")
    assert not missing, missing


def test_every_term_is_mapped_and_every_mapping_is_a_term() -> None:
    terms = set(load("ontology.yml")["terms"])
    assert terms == set(load("mappings.yml")["mappings"])


def _test_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {
        node.name
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.name.startswith("test")
    }


def test_every_invariant_names_an_existing_test() -> None:
    invariants = load("invariants.yml")["invariants"]
    ids = [item["id"] for item in invariants]
    assert len(ids) == len(set(ids)), "invariant ids must be unique"
    broken = []
    names: dict[Path, set[str]] = {}  # each file parsed once: many invariants share one
    for item in invariants:
        file_part, _, test_name = item["test"].partition("::")
        path = ROOT / file_part
        if path not in names:
            names[path] = _test_names(path) if path.is_file() else set()
        if test_name not in names[path]:
            broken.append(f"{item['id']}: {item['test']}")
    assert not broken, broken


def test_ontology_enumerations_match_the_code() -> None:
    from schema import AgentName, AutoChatStopReason, InterpreterState, MessageType

    terms = load("ontology.yml")["terms"]
    assert terms["InterpreterState"]["values"] == [s.value for s in InterpreterState]
    assert terms["AgentName"]["values"] == [a.value for a in AgentName]
    assert terms["MessageType"]["values"] == [t.name for t in MessageType]
    assert terms["AutoChat"]["stop_reasons"] == [r.value for r in AutoChatStopReason]


def test_every_ambiguity_has_a_decision() -> None:
    for item in load("ambiguities.yml")["ambiguities"]:
        assert item["id"].startswith("AMB-") and item["decision"].strip()
