"""The dialogue package stays out of `import flowkit`, loads lazily, and is registered."""

from __future__ import annotations

import subprocess
import sys

import pytest

from flowkit.cli import main
from flowkit.workflows import load_flow


def test_import_flowkit_does_not_import_the_dialogue_package() -> None:
    code = (
        "import sys, flowkit, flowkit.dialogue; "
        "print(sorted(m for m in sys.modules if m.startswith('flowkit.dialogue.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    bare = "import sys, flowkit; print('flowkit.dialogue' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", bare], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_package_exports_resolve() -> None:
    from flowkit import dialogue

    for name in dialogue.__all__:
        assert getattr(dialogue, name) is not None
    with pytest.raises(AttributeError):
        _ = dialogue.nothing_here


def test_the_example_flow_is_the_registered_dialogue_workflow(
    capsys: pytest.CaptureFixture[str],
) -> None:
    flow = load_flow("dialogue")
    assert flow.name == "dialogue" and flow.start == "SG"
    assert flow.to_data()["invariants"] == ["routing", "mode", "slots"]
    assert main(["check", "dialogue"]) == 0
    assert capsys.readouterr().out.startswith("OK dialogue: 13 nodes, 1 gate")
