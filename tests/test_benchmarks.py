"""Every benchmark still runs and ends with its JSON line (small sizes: this checks that the
scripts work, it measures nothing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).parent / "bench"

CASES = {
    "bench_core.py": (["--runs", "30", "--sessions", "100"], "one_tool"),
    "bench_events.py": (["--runs", "3"], "one_changed"),
    "bench_connectors.py": (["--chunks", "50", "--runs", "1", "--no-llama"], "overhead"),
    "bench_long_chat.py": (["--seconds", "1", "--sizes", "22", "--paces", "paced"], "paced"),
    "bench_media.py": (["--photos", "2", "--mib", "0.1"], "linked"),
    "bench_react.py": (["--seconds", "0.5", "--sizes", "2"], "sizes"),
    "bench_stream.py": (["--quick"], "plain_gradio"),
    "bench_page.py": (["--seconds", "1", "--loads", "1", "--settle", "0.5"], "served"),
    "bench_server.py": (["--seconds", "0.5", "--loads", "1", "--settle", "0.5"], "idle_cores"),
    "bench_store.py": (
        ["--sessions", "1000", "--messages", "1000", "--long", "1000"],
        "appends_per_s",
    ),
}


IN_A_BROWSER = {
    "bench_long_chat.py",
    "bench_page.py",
    "bench_react.py",
    "bench_server.py",
    "bench_stream.py",
}
"""Benchmarks that start Chromium and serve the page: 18-30 s each here (together about 6 %
of the default run's test time), so they run with the slow tests (`scripts/test.sh -m
slow`). What they drive (page loads, streaming, an idle server) the browser tests cover."""


@pytest.mark.parametrize(
    "script",
    [
        pytest.param(name, marks=[pytest.mark.slow] if name in IN_A_BROWSER else [])
        for name in sorted(CASES)
    ],
)
def test_benchmark_runs_and_ends_with_its_figures(script: str, tmp_path: Path) -> None:
    args, key = CASES[script]
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", "TMPDIR": str(scratch)}
    done = subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    # a benchmark that works around an error (a server's failed event) measures something else
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert key in figures
    # Gradio keeps its own shared cache in $TMPDIR/gradio; anything else is a leftover.
    left = sorted(p.name for p in scratch.iterdir() if p.name != "gradio")
    assert not left, f"the benchmark left its temporary files behind: {left}"
    if script == "bench_core.py":
        assert figures["one_tool"]["events_per_run"] == 19
        assert figures["ten_tools"]["events_per_run"] == 46
        assert figures["one_tool"]["framework_median_us"] > 0
    if script == "bench_media.py":  # the photos are linked, not carried
        assert figures["linked"]["chat_json_bytes"] < 2_000 < figures["inline"]["chat_json_bytes"]
