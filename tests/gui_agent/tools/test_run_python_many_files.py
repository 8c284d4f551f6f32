"""run_python's result names the files a run created or changed: up to 1,000 in its
metadata (the rest counted), 100 in the text the model reads (the rest counted), however
many the code wrote."""

from __future__ import annotations

from pathlib import Path

from tests.gui_agent.tools.test_run_python import run


async def test_a_run_that_writes_many_files_names_a_bounded_number(tmp_path: Path) -> None:
    workdir = tmp_path / "session"
    code = """
        import os
        os.makedirs("out", exist_ok=True)
        for n in range(1500):
            open(f"out/{n:04}.txt", "w").close()
        print("wrote them")
    """
    result = await run(workdir, code)
    assert not result.is_error, result.content
    named = result.metadata["files_created"]
    assert named == [f"out/{n:04}.txt" for n in range(1000)]
    assert result.metadata["files_not_listed"] == 500
    assert "and 1400 more]" in result.content
    assert len(list((workdir / "out").iterdir())) == 1500  # every file is there
