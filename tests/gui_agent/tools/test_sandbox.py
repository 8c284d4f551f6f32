"""The server's /proc files stay closed to the code it runs, also when it runs as root."""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
from pathlib import Path
from textwrap import dedent

import pytest

from gui_agent.tools import ToolContext, ToolRegistry, _sandbox, execute_tool, run_python
from schema import ToolCall

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="prctl is Linux-only")

PR_GET_DUMPABLE = 3
SECRET = "sk-test-only-in-the-parents-environment"

READER = """
import os, sys
try:
    data = open(f"/proc/{os.getppid()}/environ", "rb").read()
except PermissionError:
    print("refused")
else:
    print("visible" if sys.argv[1].encode() in data else "absent")
"""

# Loads the sandbox module by path, as the run_python child does, and reports whether a
# child of it can read its initial environment from /proc. Both drop the same capabilities
# first: as root, the kernel also refuses a reader with fewer capabilities than its target,
# which would hide what protect_process itself does.
PARENT = """
import importlib.util, subprocess, sys
path, mode, reader, secret = sys.argv[1:5]
spec = importlib.util.spec_from_file_location("sandbox", path)
sandbox = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sandbox)
sandbox.drop_inspection_capabilities()
if mode == "protect":
    assert sandbox.protect_process() and sandbox.protect_process()
child = subprocess.run(
    [sys.executable, "-c", reader, secret], capture_output=True, text=True, check=False
)
print(child.stdout.strip() or child.stderr)
"""


@pytest.mark.parametrize(("mode", "expected"), [("protect", "refused"), ("as-is", "visible")])
def test_a_protected_process_hides_its_environment_from_its_children(
    mode: str, expected: str
) -> None:
    env = {"PATH": os.environ.get("PATH", os.defpath), "GUI_AGENT_TEST_SECRET": SECRET}
    parent = subprocess.run(
        [sys.executable, "-c", PARENT, _sandbox.__file__, mode, READER, SECRET],
        capture_output=True,
        text=True,
        env=env,
        timeout=30,
        check=False,
    )
    assert parent.returncode == 0, parent.stderr
    assert parent.stdout.strip() == expected


async def test_run_python_code_cannot_look_into_the_server(tmp_path: Path) -> None:
    code = f"""
        import json, os, subprocess, sys
        server = {os.getpid()}
        outcome = {{}}
        def attempt(name, action):
            try:
                action()
                outcome[name] = "allowed"
            except OSError as error:
                outcome[name] = type(error).__name__
        attempt("environ", lambda: open(f"/proc/{{server}}/environ", "rb").read())
        attempt("mem", lambda: open(f"/proc/{{server}}/mem", "rb"))
        attempt("maps", lambda: open(f"/proc/{{server}}/maps", "rb").read())
        attempt("cwd", lambda: os.readlink(f"/proc/{{server}}/cwd"))
        attempt("fd/0", lambda: os.readlink(f"/proc/{{server}}/fd/0"))
        attempt("fd", lambda: os.listdir(f"/proc/{{server}}/fd"))
        cat = [sys.executable, "-c", f"open('/proc/{{server}}/environ', 'rb').read()"]
        outcome["exec"] = subprocess.run(cat, capture_output=True).returncode
        print(json.dumps(outcome))
    """
    ctx = ToolContext(session_id="s", run_id="r", call_id="c", workdir=tmp_path / "session")
    call = ToolCall(id="c", name="run_python", arguments=json.dumps({"code": dedent(code)}))
    result = await execute_tool(ToolRegistry([run_python]), call, ctx)
    assert not result.is_error, result.content
    outcome = json.loads(result.content.splitlines()[0])
    refused = "PermissionError"
    assert outcome["environ"] == refused
    assert outcome["mem"] == refused
    assert outcome["maps"] == refused
    assert outcome["cwd"] == refused
    assert outcome["fd/0"] == refused
    # root owns a non-dumpable process's /proc files, so root may still list fd numbers
    assert outcome["fd"] == ("allowed" if os.geteuid() == 0 else refused)
    assert outcome["exec"] != 0  # a program the code starts cannot get back in either
    assert ctypes.CDLL(None).prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0  # the server hid itself
