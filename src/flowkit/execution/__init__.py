"""How a flow *runs*: the sans-IO core (``_core.run_steps`` yields instructions and
receives outcomes), the rules every step follows, batches and subflows, replaying and
upgrading journals, and the sync/async drivers. Driven by a ``RunPort`` (``_port``), never by
importing the ``Runner``.

Private: import from ``flowkit`` (see docs/architecture.md).
"""
