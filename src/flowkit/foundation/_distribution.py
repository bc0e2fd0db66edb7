"""The name flowkit is published under, and the install hints built from it.

The import package and the command are ``flowkit``; the distribution on the package index is
``flowkit-workflows``, because ``flowkit`` there is an unrelated flow-cytometry package. Every
hint that says what to install comes from here, so it names what can really be installed.
"""

from __future__ import annotations

__all__ = ["DISTRIBUTION", "install_hint"]

#: The distribution name in pyproject.toml (``pip install flowkit-workflows``).
DISTRIBUTION = "flowkit-workflows"


def install_hint(extra: str | None = None) -> str:
    """The command that installs flowkit with ``extra``, e.g.
    ``pip install 'flowkit-workflows[server]'`` (quoted: shells expand brackets)."""
    return f"pip install '{DISTRIBUTION}[{extra}]'" if extra else f"pip install '{DISTRIBUTION}'"
