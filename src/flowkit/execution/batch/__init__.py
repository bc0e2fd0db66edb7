"""``Map`` and ``Parallel`` at run time: fan-out, per-item checkpoints, gate branches,
the join, and the drivers that run calls concurrently.
"""
