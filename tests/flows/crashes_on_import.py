"""A flow module with a bug that raises while it is imported (not a definition problem)."""

raise RuntimeError("this module is broken")
