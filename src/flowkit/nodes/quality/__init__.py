"""Nodes of the quality workflow; each ``make_*`` closes over a ``QualityServices``."""
