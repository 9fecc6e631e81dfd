"""Adapters, one per outside thing. They translate library errors into ``nika_tui.errors``."""
