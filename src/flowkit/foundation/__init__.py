"""What every layer stands on: reading untrusted JSON and YAML within limits, long
numbers, atomic file writes, the logger and its masking, safe regexes, install hints.

Private: import from ``flowkit`` (see docs/architecture.md).
"""
