"""The ``Runner`` and what it returns: start/resume/stream, thread state and history,
lifecycle (prune, archive). The top of the engine.

Private modules: import from ``flowkit`` (see docs/architecture.md).
"""
