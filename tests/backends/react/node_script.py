"""Runs a script against the React front end's `history.js` in Node, the way its unit tests
check the page's logic without a browser."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

__all__ = ["HISTORY", "run_with_history"]

HISTORY = Path(__file__).resolve().parents[3] / "backends" / "react" / "src" / "history.js"


def run_with_history(script: str, argument: object) -> Any:
    """Runs `script` (an ES module whose `%s` is replaced by `history.js`'s address, to import
    from) in Node with `argument` as JSON in `process.argv[1]`, and returns the JSON it
    printed."""
    node = shutil.which("node")
    assert node is not None, "Node.js is needed (scripts/test.sh installs it)"
    module = script % json.dumps(HISTORY.as_uri())
    done = subprocess.run(
        [node, "--input-type=module", "-e", module, json.dumps(argument)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return json.loads(done.stdout)
