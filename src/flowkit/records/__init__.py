"""What a run leaves behind: journal records and snapshots, attempt markers, events and
the ``NodeError`` a failed node records.

Private: import from ``flowkit`` (see docs/architecture.md).
"""
