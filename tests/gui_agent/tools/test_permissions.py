"""PermissionPolicy: which calls run freely, which are refused, which need a person."""

from __future__ import annotations

import pytest

from gui_agent.exceptions import ConfigError
from gui_agent.tools import PermissionPolicy, default_tools, run_python, tool, write_file
from schema import PermissionMode

ALLOW, ASK, DENY = PermissionMode.ALLOW, PermissionMode.ASK, PermissionMode.DENY


@tool
def lookup(city: str) -> str:
    """Read-only."""
    return city


def test_defaults_ask_for_destructive_tools_and_allow_safe_ones() -> None:
    policy = PermissionPolicy()
    assert policy.decide(run_python) is ASK
    assert policy.decide(write_file) is ASK
    assert policy.decide(lookup) is ALLOW
    decisions = {t.name: policy.decide(t) for t in default_tools()}
    assert decisions == {
        "run_python": ASK,
        "list_files": ALLOW,
        "read_file": ALLOW,
        "write_file": ASK,
        "task_complete": ALLOW,
    }


def test_defaults_can_be_changed() -> None:
    strict = PermissionPolicy(destructive_default=DENY, safe_default=ASK)
    assert strict.decide(run_python) is DENY
    assert strict.decide(lookup) is ASK


def test_allowed_for_the_session_runs_without_asking() -> None:
    policy = PermissionPolicy()
    assert policy.decide(run_python, session_allowed={"run_python"}) is ALLOW
    assert policy.decide(write_file, session_allowed={"run_python"}) is ASK


def test_explicit_modes_win_over_defaults_and_session_allowance() -> None:
    policy = PermissionPolicy({"run_python": DENY, "write_file": ALLOW, "lookup": ASK})
    assert policy.decide(run_python) is DENY
    assert policy.decide(run_python, session_allowed={"run_python"}) is DENY
    assert policy.decide(write_file) is ALLOW
    assert policy.decide(lookup) is ASK
    # "Allow for this session" is the person's answer to that very question.
    assert policy.decide(lookup, session_allowed=frozenset({"lookup"})) is ALLOW


def test_with_modes_returns_a_copy_with_the_new_modes_on_top() -> None:
    base = PermissionPolicy({"run_python": DENY}, destructive_default=DENY)
    session = base.with_modes({"write_file": ALLOW, "run_python": ASK})
    assert session.decide(write_file) is ALLOW
    assert session.decide(run_python) is ASK
    assert session.destructive_default is DENY
    assert base.decide(run_python) is DENY
    assert base.decide(write_file) is DENY
    assert dict(base.modes) == {"run_python": DENY}


def test_modes_given_as_text_are_accepted_and_typos_are_refused() -> None:
    policy = PermissionPolicy({"run_python": "allow"})
    assert policy.decide(run_python) is ALLOW
    with pytest.raises(ConfigError, match="'sometimes'"):
        PermissionPolicy({"run_python": "sometimes"})
