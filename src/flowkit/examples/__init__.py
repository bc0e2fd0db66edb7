"""Small example workflows that ship with flowkit, for the docs and ``flowkit demo``."""
