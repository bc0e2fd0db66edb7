"""What a flow *is*: its state and reducers, nodes, gates, route tables, ``Map``,
``Parallel`` and ``Subflow``, the ``Flow`` itself with its build-time checks, migrations and
the ``transitions`` machine it compiles to. Nothing here runs a flow.

Private: import from ``flowkit`` (see docs/architecture.md).
"""
