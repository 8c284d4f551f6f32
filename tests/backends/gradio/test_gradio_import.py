"""Gradio is imported without its stub writer, and otherwise as it is.

Each check runs in a fresh interpreter: which import of Gradio comes first decides, and the
test process has imported it long ago.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]

COMPONENT = textwrap.dedent(
    """
    from gradio.components.base import Component

    class Dial(Component):
        EVENTS = ["change"]

        def preprocess(self, payload):
            return payload

        def postprocess(self, value):
            return value

        def api_info(self):
            return {"type": "number"}

        def example_payload(self):
            return 1

        def example_value(self):
            return 1
    """
)


def run(code: str, folder: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=folder,
        env={
            **os.environ,
            "PYTHONPATH": f"{ROOT}{os.pathsep}{folder}",
            "GRADIO_ANALYTICS_ENABLED": "False",
        },
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_page_imports_gradio_without_writing_stubs_next_to_component_classes(
    tmp_path: Path,
) -> None:
    (tmp_path / "dial.py").write_text(COMPONENT)
    said = run(
        """
        import sys
        import backends.gradio
        import gradio.component_meta as meta
        from backends.gradio.gradio_import import _NoStubFinder
        import dial
        print(meta.create_or_modify_pyi.__name__)
        print(any(isinstance(f, _NoStubFinder) for f in sys.meta_path))
        print(dial.Dial.__name__, callable(dial.Dial.change))
        """,
        tmp_path,
    )
    assert said.split() == ["_write_no_stub", "False", "Dial", "True"]
    assert not (tmp_path / "dial.pyi").exists()


def test_a_gradio_imported_before_the_page_is_left_as_it_is(tmp_path: Path) -> None:
    """The control: Gradio's own writer does write the stub, so the test above can fail."""
    (tmp_path / "dial.py").write_text(COMPONENT)
    said = run(
        """
        import gradio
        import gradio.component_meta as meta
        from backends.gradio.gradio_import import import_gradio
        assert import_gradio() is gradio
        import dial
        print(meta.create_or_modify_pyi.__name__)
        """,
        tmp_path,
    )
    assert said.split() == ["create_or_modify_pyi"]
    assert "class Dial" in (tmp_path / "dial.pyi").read_text()
