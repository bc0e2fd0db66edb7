"""`flowkit.runtime` exports what its docs name, loads lazily, and stays out of `import flowkit`."""

from __future__ import annotations

import subprocess
import sys

import flowkit.runtime


def test_every_exported_name_resolves() -> None:
    assert flowkit.runtime.__all__ == sorted(flowkit.runtime.__all__, key=_order)
    for name in flowkit.runtime.__all__:
        assert getattr(flowkit.runtime, name) is not None, name


def _order(name: str) -> tuple[bool, bool, str]:
    return (not name.isupper(), name[:1].islower(), name)


def test_importing_flowkit_does_not_load_the_runtime_services() -> None:
    code = (
        "import sys, flowkit, flowkit.runtime; "
        "print(','.join(sorted(m for m in sys.modules if m.startswith('flowkit.runtime.'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
